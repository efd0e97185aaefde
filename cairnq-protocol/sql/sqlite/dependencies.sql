-- Task dependencies (extension ext_0008, book "Task dependencies"). A
-- waiting task is a queued row whose run_at_ms is 253402300799999
-- (9999-12-31T23:59:59.999Z); the migration's trigger releases it.

-- Whether the database has the dependency tables (one another SDK
-- installed, opened as it is, may not).
-- name: dependencies_installed
select cast(exists (select 1 from sqlite_master where type = 'table' and name = 'cairnq_ext_task_deps') as text) as id

-- The dependencies a submit names that exist, with their status. SQLite's
-- write transaction keeps them from ending before the submit commits.
-- name: lock_dependencies
select id, status from cairnq_tasks where id in (select value from json_each(:ids))

-- :ids and :outcomes are parallel JSON arrays (an outcome is null for a
-- dependency that has not ended). Two json_each joined on their keys are a
-- nested loop that parses the inner array once per outer row, quadratic in
-- a fan-out's thousands of children: the outcomes are materialized once
-- and the cross join keeps them inner, where SQLite indexes them by key.
-- name: insert_dependencies
with o (k, v) as materialized (select key, value from json_each(:outcomes))
insert into cairnq_ext_task_deps (task_id, depends_on_id, ordinal, outcome, resolved_at_ms)
select :task_id, d.value, d.key, o.v, iif(o.v is null, null, :now_ms)
from json_each(:ids) d cross join o on o.k = d.key

-- name: insert_task_wait
insert into cairnq_ext_task_waits (task_id, on_failure, total, remaining, not_before_ms)
select id, :on_failure, :total, :remaining, run_at_ms from cairnq_tasks where id = :task_id

-- The new task waits: no worker of any SDK claims it until released.
-- name: hold_task
update cairnq_tasks set run_at_ms = 253402300799999 where id = :id and status = 'queued'
returning *

-- A dependency had already ended failed or canceled at submit: the new
-- task is canceled at once, with the envelope the trigger would write.
-- name: cancel_for_dependency
update cairnq_tasks set status = 'canceled', error = :error, completed_at_ms = :now_ms, updated_at_ms = :now_ms
where id = :id and status = 'queued'
returning *

-- The dependencies of a task, whole rows, in the order the submit named them.
-- name: select_dependencies
select t.* from cairnq_ext_task_deps e join cairnq_tasks t on t.id = e.depends_on_id
where e.task_id = :task_id
order by e.ordinal

-- How far along the waits of these tasks are, one JSON object each.
-- name: select_task_waits
select json_object('task_id', w.task_id, 'total', w.total, 'remaining', max(w.remaining, 0), 'on_failure', w.on_failure,
                   'waiting', json(iif(t.status = 'queued' and t.run_at_ms = 253402300799999, 'true', 'false'))) as id
from cairnq_ext_task_waits w join cairnq_tasks t on t.id = w.task_id
where w.task_id in (select value from json_each(:ids))
