-- Durable steps (extension ext_0009, book "Durable steps"). A step row is
-- read back as one JSON object in a column named id, as schedules and
-- limits are, so the shared flows read it through the executor's text
-- rows. `result` and `error` come back as JSON text inside that object
-- (a string, or null for SQL NULL), so a step that returned JSON `null`
-- stays apart from one that failed.

-- A task's steps, in the order they were stored.
-- name: select_steps
select json_object('task_id', task_id, 'name', name, 'attempt', attempt, 'result', result, 'error', error, 'created_at_ms', created_at_ms) as id
from cairnq_ext_steps
where task_id = :task_id
order by created_at_ms, name

-- One step, written only while the attempt holds the task's lease: the
-- ownership check of every worker write (PROTOCOL.md "Operations"), plus
-- the attempt, so a stale attempt of the same worker writes nothing either.
-- No row back means the lease is lost. A name stored before is overwritten
-- (only an attempt holding the lease can get here, and it ran the step).
-- name: save_step
insert into cairnq_ext_steps (task_id, name, attempt, result, error, created_at_ms)
select id, :name, attempt, :result, :error, :now_ms
from cairnq_tasks
where id = :task_id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
  and attempt = :attempt
on conflict (task_id, name) do update set
    attempt = excluded.attempt, result = excluded.result, error = excluded.error, created_at_ms = excluded.created_at_ms
returning json_object('task_id', task_id, 'name', name, 'attempt', attempt, 'result', result, 'error', error, 'created_at_ms', created_at_ms) as id
