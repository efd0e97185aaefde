-- Client-side statements: submit, reads, cancel, retry, purge, counts.
-- `:now_ms` comes from the SDK's clock. Optional filters are `-- when:`
-- lines, so a rendered statement names only the columns a caller filters on
-- and the planner reaches the index for exactly those. A task is picked
-- either by id (`by_id`) or through its business key (`by_key`).
--
-- Writes to cairnq_tasks say `or fail`: every write runs inside a savepoint
-- or transaction of its own that the SDK rolls back when the write fails,
-- so SQLite need not keep a per-statement undo journal as well (with the
-- default `or abort` it copies every page a statement touches first).

-- No `returning`: SQLite runs RETURNING through a statement journal that
-- copies every page the insert touches (about half the cost of an insert
-- here); the SDK builds the row it wrote from what it inserted.
-- name: insert_task
insert or fail into cairnq_tasks (
    id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms,
    parent_id, root_id, correlation_id, created_at_ms, updated_at_ms
) values (
    :id, :name, :queue, 'queued', :payload, :metadata, 0, :max_attempts, :priority, :now_ms + :delay_ms,
    :parent_id, :root_id, :correlation_id, :now_ms, :now_ms
)

-- insert_task for many unkeyed tasks in one statement (about two thirds
-- of the per-row cost of one insert each). :tasks is a JSON array with one
-- array per task: [id, name, queue, payload, metadata, max_attempts,
-- priority, delay_ms, parent_id, root_id, correlation_id], payload and
-- metadata as JSON text inside a JSON string, so `->>` hands back exactly
-- the text the SDK wrote.
-- name: insert_tasks
insert or fail into cairnq_tasks (
    id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms,
    parent_id, root_id, correlation_id, created_at_ms, updated_at_ms
)
select
    value ->> 0, value ->> 1, value ->> 2, 'queued', value ->> 3, value ->> 4, 0, value ->> 5, value ->> 6,
    :now_ms + (value ->> 7), value ->> 8, value ->> 9, value ->> 10, :now_ms, :now_ms
from json_each(:tasks)

-- name: select_task
select * from cairnq_tasks
where id = :id -- when: by_id
where id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key

-- name: select_task_status
select id, status from cairnq_tasks
where id = :id -- when: by_id
where id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key

-- The key's current task; no row when the key is free or its task vanished.
-- name: select_key_task
select t.id, t.status
from cairnq_task_keys k join cairnq_tasks t on t.id = k.task_id
where k.key = :key

-- Repoints the key (inserting it the first time).
-- name: upsert_task_key
insert into cairnq_task_keys (key, task_id, created_at_ms, updated_at_ms)
values (:key, :task_id, :now_ms, :now_ms)
on conflict (key) do update set task_id = excluded.task_id, updated_at_ms = excluded.updated_at_ms

-- name: list_tasks
select * from cairnq_tasks
where 1 = 1
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name = :name -- when: name
  and root_id = :root_id -- when: root_id
  and correlation_id = :correlation_id -- when: correlation_id
  and (created_at_ms, id) < (:after_ms, :after_id) -- when: after
order by created_at_ms desc, id desc
limit :limit offset :offset

-- name: count_tasks_by_queue_status
select queue, status, count(*) from cairnq_tasks
where queue = :queue -- when: queue
group by queue, status

-- Per queue, how long its oldest due queued task has waited since it
-- became due (the queue-age gauge).
-- name: oldest_due_by_queue
select queue, :now_ms - min(run_at_ms) as age_ms from cairnq_tasks
where status = 'queued' and run_at_ms <= :now_ms
  and queue = :queue -- when: queue
group by queue

-- Bounded: reads at most :at_most index entries.
-- name: count_queued
select count(*) from (
    select 1 from cairnq_tasks where queue = :queue and status = 'queued' limit :at_most
)

-- The same counts from the counter table of ext_0002_task_counts (kept by
-- triggers): a few rows whatever the table's size.
-- name: read_task_counts
select queue, status, n from cairnq_ext_task_counts
where n > 0
  and queue = :queue -- when: queue

-- count_queued from the counter table, capped as count_queued is.
-- name: read_queued_count
select min(coalesce((select n from cairnq_ext_task_counts where queue = :queue and status = 'queued'), 0), :at_most)

-- Queued -> canceled now; running -> cancel requested (the first request's
-- time is kept); terminal rows match nothing.
-- name: cancel_task
update or fail cairnq_tasks set
    status = iif(status = 'queued', 'canceled', status),
    completed_at_ms = iif(status = 'queued', :now_ms, completed_at_ms),
    cancel_requested_at_ms = iif(status = 'running', coalesce(cancel_requested_at_ms, :now_ms), cancel_requested_at_ms),
    updated_at_ms = :now_ms
where status in ('queued', 'running')
  and id = :id -- when: by_id
  and id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key
returning *

-- Failed or canceled -> queued now; max_attempts is not consulted.
-- name: retry_task
update or fail cairnq_tasks set
    attempt = 0, -- when: reset_attempt
    status = 'queued',
    error = null,
    worker_id = null,
    lease_until_ms = null,
    cancel_requested_at_ms = null,
    completed_at_ms = null,
    progress = null,
    message = null,
    run_at_ms = :now_ms,
    updated_at_ms = :now_ms
where status in ('failed', 'canceled')
  and id = :id -- when: by_id
  and id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key
returning *

-- Oldest terminal rows completed strictly before the cutoff. Without a
-- status filter the status list is spelled exactly as in the partial
-- cairnq_tasks_queue_completed_idx, so a queue filter can use that index.
-- name: purge_tasks
delete from cairnq_tasks where id in (
    select id from cairnq_tasks
    where status in ('succeeded', 'failed', 'canceled') -- when: any_status
    where status = :status -- when: status
      and completed_at_ms < :now_ms - :older_than_ms
      and queue = :queue -- when: queue
      and name = :name -- when: name
    order by completed_at_ms
    limit :limit
)
returning id
