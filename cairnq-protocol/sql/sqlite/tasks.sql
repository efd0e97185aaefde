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

-- The key pointing at a task, if any (cairnq_task_keys by task_id: the
-- index of ext_0004_task_key_index).
-- name: select_task_key
select key from cairnq_task_keys where task_id = :task_id
order by updated_at_ms desc
limit 1

-- Two ways to read one page of a filtered list, newest first; the store
-- picks one from how many rows match (see `Query::list_planned`). This one
-- reads through the filters' own indexes and sorts what matches, the right
-- plan when few rows match. The order and the keyset cursor are written
-- `+column`, which SQLite cannot serve from the list-order index, so a deep
-- page of a rare filter never walks that index past a million rows.
-- name: list_tasks
select * from cairnq_tasks
where 1 = 1
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name = :name -- when: name
  and root_id = :root_id -- when: root_id
  and correlation_id = :correlation_id -- when: correlation_id
  and (+created_at_ms, +id) < (:after_ms, :after_id) -- when: after
  and +created_at_ms between :since_ms and :until_ms -- when: created
order by +created_at_ms desc, +id desc
limit :limit offset :offset

-- The other way: walk the list-order index (ext_0003) from the top or the
-- cursor and keep what matches, the right plan when many rows match (a
-- page fills after a few entries; sorting them all would read every one).
-- The filters are written `+column` so no filter index competes. Unfiltered
-- lists read this way too.
-- A created range (`created`) bounds the walk itself: it is a range of the
-- index, so a list of the last hour reads only that hour's entries.
-- name: list_tasks_in_order
select * from cairnq_tasks
where 1 = 1
  and +status = :status -- when: status
  and +queue = :queue -- when: queue
  and +name = :name -- when: name
  and +root_id = :root_id -- when: root_id
  and +correlation_id = :correlation_id -- when: correlation_id
  and (created_at_ms, id) < (:after_ms, :after_id) -- when: after
  and created_at_ms between :since_ms and :until_ms -- when: created
order by created_at_ms desc, id desc
limit :limit offset :offset

-- Bounded: counts at most :at_most matching rows, through the filters' own
-- indexes (the cursor and the created range are checked per row, never walked).
-- name: count_tasks
select count(*) from (
    select 1 from cairnq_tasks
    where 1 = 1
      and status = :status -- when: status
      and queue = :queue -- when: queue
      and name = :name -- when: name
      and root_id = :root_id -- when: root_id
      and correlation_id = :correlation_id -- when: correlation_id
      and (+created_at_ms, +id) < (:after_ms, :after_id) -- when: after
      and +created_at_ms between :since_ms and :until_ms -- when: created
    limit :at_most
)

-- How many rows a status and/or queue filter matches, exactly, from the
-- counter table of ext_0002_task_counts.
-- name: read_matching_count
select coalesce(sum(n), 0) from cairnq_ext_task_counts
where 1 = 1
  and status = :status -- when: status
  and queue = :queue -- when: queue

-- The tasks `:task_id` submitted: its chain's rows (the root index) whose
-- parent it is, newest first.
-- name: list_children
select * from cairnq_tasks
where root_id = (select root_id from cairnq_tasks where id = :task_id)
  and parent_id = :task_id
order by created_at_ms desc, id desc
limit :limit

-- name: count_tasks_by_queue_status
select queue, status, count(*) from cairnq_tasks
where queue = :queue -- when: queue
group by queue, status

-- Per queue, its queued task that has waited longest since it became due,
-- and for how long (the queue-age gauge, the dashboard's overview, `cairnq
-- top` and `doctor`). A task is due from the later of run_at_ms and
-- created_at_ms (Task::due_at_ms: nothing waits before it exists). A min
-- over every queued row would read a whole backlog; this reads a few
-- entries of the claim index (queue, status, priority desc, run_at_ms, id)
-- per queue and priority instead: the queues one seek at a time (each the
-- smallest above the last), then each queue's queued priorities the same
-- way, then per priority its first row in run_at_ms order. That row's due
-- time bounds the level's earliest: a row due sooner has run_at_ms at most
-- that bound, so only the rows up to it are read (the first row alone,
-- unless some writer set run_at_ms before created_at_ms). The earliest of
-- the levels is the queue's; it is due when it is not after now.
-- name: oldest_due_by_queue
with recursive
queues(queue) as (
    select :queue -- when: queue
    select min(queue) from cairnq_tasks -- when: all_queues
    union all -- when: all_queues
    select (select min(t.queue) from cairnq_tasks t where t.queue > queues.queue) -- when: all_queues
    from queues where queue is not null -- when: all_queues
),
levels(queue, priority) as (
    select queue, (select max(t.priority) from cairnq_tasks t where t.queue = queues.queue and t.status = 'queued')
    from queues where queue is not null
    union all
    select queue, (
        select max(t.priority) from cairnq_tasks t
        where t.queue = levels.queue and t.status = 'queued' and t.priority < levels.priority
    )
    from levels where priority is not null
),
-- Per level: the bound (its first row's due time, read once), then the
-- soonest due row up to it.
heads(queue, priority, bound) as materialized (
    select queue, priority, (
        select max(t.run_at_ms, t.created_at_ms) from cairnq_tasks t
        where t.queue = levels.queue and t.status = 'queued' and t.priority = levels.priority
        order by t.run_at_ms, t.id limit 1
    )
    from levels where priority is not null
),
oldest(queue, id, due_at_ms) as (
    select queue, (
        select t.id from cairnq_tasks t
        where t.queue = heads.queue and t.status = 'queued' and t.priority = heads.priority
          and t.run_at_ms <= heads.bound
        order by max(t.run_at_ms, t.created_at_ms), t.id limit 1
    ), (
        select min(max(t.run_at_ms, t.created_at_ms)) from cairnq_tasks t
        where t.queue = heads.queue and t.status = 'queued' and t.priority = heads.priority
          and t.run_at_ms <= heads.bound
    )
    from heads
)
-- The bare id comes from the row holding the min (SQLite's rule for one
-- min() aggregate).
select queue, id, :now_ms - min(due_at_ms) as age_ms from oldest
group by queue
having min(due_at_ms) <= :now_ms

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

-- What purge_tasks would delete now, read without deleting (a purge's
-- preview, `cairnq purge --dry-run`): the same rows by the same rule, the
-- same order and bound, through the same index.
-- name: list_purgeable
select * from cairnq_tasks
where status in ('succeeded', 'failed', 'canceled') -- when: any_status
where status = :status -- when: status
  and completed_at_ms < :now_ms - :older_than_ms
  and queue = :queue -- when: queue
  and name = :name -- when: name
order by completed_at_ms
limit :limit
