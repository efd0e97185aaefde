-- Task dependencies (extension ext_0008, book "Task dependencies"). A
-- waiting task is a queued row whose run_at_ms is 253402300799999
-- (9999-12-31T23:59:59.999Z); the migration's trigger releases it.

-- Whether the database has the dependency tables (one another SDK
-- installed, opened as it is, may not).
-- name: dependencies_installed
select (to_regclass('cairnq_ext_task_deps') is not null)::int::text as id

-- The dependencies a submit names that exist, with their status, locked
-- (sorted, so submits never deadlock) until the submit commits: a
-- dependency cannot end between this read and the edges' insert, which
-- its settle's trigger then sees. One ending right now is waited for and
-- read as it ended.
-- name: lock_dependencies
select id, status from cairnq_tasks where id = any(:ids::text[]) order by id for share

-- name: insert_dependencies
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_ext_task_deps (task_id, depends_on_id, ordinal, outcome, resolved_at_ms)
select :task_id::text, d.id, d.ord - 1, d.outcome, case when d.outcome is null then null else clock.now_ms end
from clock, unnest(:ids::text[], :outcomes::text[]) with ordinality as d (id, outcome, ord)

-- name: insert_task_wait
insert into cairnq_ext_task_waits (task_id, on_failure, total, remaining, not_before_ms)
select id, :on_failure::text, :total::int, :remaining::int, run_at_ms from cairnq_tasks where id = :task_id::text

-- The new task waits: no worker of any SDK claims it until released.
-- name: hold_task
update cairnq_tasks set run_at_ms = 253402300799999 where id = :id and status = 'queued'
returning *

-- A dependency had already ended failed or canceled at submit: the new
-- task is canceled at once, with the envelope the trigger would write.
-- name: cancel_for_dependency
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set status = 'canceled', error = :error::jsonb, completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status = 'queued'
returning t.*

-- The dependencies of a task, whole rows, in the order the submit named them.
-- name: select_dependencies
select t.* from cairnq_ext_task_deps e join cairnq_tasks t on t.id = e.depends_on_id
where e.task_id = :task_id
order by e.ordinal

-- How far along the waits of these tasks are, one JSON object each.
-- name: select_task_waits
select json_build_object('task_id', w.task_id, 'total', w.total, 'remaining', greatest(w.remaining, 0), 'on_failure', w.on_failure,
                         'waiting', t.status = 'queued' and t.run_at_ms = 253402300799999)::text as id
from cairnq_ext_task_waits w join cairnq_tasks t on t.id = w.task_id
where w.task_id = any(:ids::text[])
