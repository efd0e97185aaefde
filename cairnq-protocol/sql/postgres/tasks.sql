-- Client-side statements: submit, reads, cancel, retry, purge, counts.
-- Every statement reads the database clock once, in a `clock` CTE (hosts do
-- not share a clock), and compares against it through a scalar subquery so
-- the comparison can still bound an index scan. Optional filters are
-- `-- when:` lines, so a rendered statement names only the columns a caller
-- filters on. A task is picked either by id (`by_id`) or through its
-- business key (`by_key`).

-- name: insert_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_tasks (
    id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms,
    parent_id, root_id, correlation_id, created_at_ms, updated_at_ms
) values (
    :id, :name, :queue, 'queued', :payload::jsonb, :metadata::jsonb, 0, :max_attempts::integer, :priority::integer,
    (select now_ms from clock) + :delay_ms::bigint,
    :parent_id, :root_id, :correlation_id, (select now_ms from clock), (select now_ms from clock)
)
returning *

-- insert_task for many unkeyed tasks in one statement: the i-th element
-- of each array belongs to the i-th task. Rows come back in no promised
-- order.
-- name: insert_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_tasks (
    id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms,
    parent_id, root_id, correlation_id, created_at_ms, updated_at_ms
)
select
    t.id, t.name, t.queue, 'queued', t.payload, t.metadata, 0, t.max_attempts, t.priority,
    (select now_ms from clock) + t.delay_ms, t.parent_id, t.root_id, t.correlation_id,
    (select now_ms from clock), (select now_ms from clock)
from unnest(
    :ids::text[], :names::text[], :queues::text[], :payloads::jsonb[], :metadatas::jsonb[],
    :max_attempts::integer[], :priorities::integer[], :delays_ms::bigint[], :parent_ids::text[],
    :root_ids::text[], :correlation_ids::text[]
) as t(id, name, queue, payload, metadata, max_attempts, priority, delay_ms, parent_id, root_id, correlation_id)
returning *

-- name: select_task
select * from cairnq_tasks
where id = :id -- when: by_id
where id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key

-- name: select_task_status
select id, status from cairnq_tasks
where id = :id -- when: by_id
where id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key

-- The key's current task; no row when the key is free or its task vanished.
-- Read under the key's advisory transaction lock.
-- name: select_key_task
select t.id, t.status
from cairnq_task_keys k join cairnq_tasks t on t.id = k.task_id
where k.key = :key

-- Repoints the key (inserting it the first time).
-- name: upsert_task_key
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_task_keys (key, task_id, created_at_ms, updated_at_ms)
select :key::text, :task_id::text, now_ms, now_ms from clock
on conflict (key) do update set task_id = excluded.task_id, updated_at_ms = excluded.updated_at_ms

-- The key pointing at a task, if any (cairnq_task_keys by task_id: the
-- index of ext_0004_task_key_index).
-- name: select_task_key
select key from cairnq_task_keys where task_id = :task_id::text
order by updated_at_ms desc
limit 1

-- Two ways to read one page of a filtered list, newest first; the store
-- picks one from how many rows match (see `Query::list_planned`). This one
-- reads through the filters' own indexes and sorts what matches, the right
-- plan when few rows match. The order and the cursor are written on
-- `created_at_ms + 0`, which the list-order index cannot serve: a pooled
-- connection's generic plan cannot know the value is rare, and would
-- otherwise walk that index past every row looking for it.
-- name: list_tasks
select * from cairnq_tasks
where true
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name = :name -- when: name
  and root_id = :root_id -- when: root_id
  and correlation_id = :correlation_id -- when: correlation_id
  and (created_at_ms + 0, id) < (:after_ms::bigint, :after_id::text) -- when: after
  and created_at_ms + 0 between :since_ms::bigint and :until_ms::bigint -- when: created
order by created_at_ms + 0 desc, id desc
limit :limit::bigint offset :offset::bigint

-- The other way: walk the list-order index (ext_0003) from the top or the
-- cursor and keep what matches, the right plan when many rows match.
-- Status and queue stay plain: they have few values, so even a generic
-- plan estimates each common and walks; written as expressions they would
-- be estimated at 0.5% each, and two of them make a parallel scan and
-- sort of the table look cheaper than the walk (measured at 1M rows: 610
-- ms against 17). Name, root and correlation are written `column || ''`,
-- which no filter index serves, so a generic plan never seeks through
-- them and sorts. Unfiltered lists read this way too.
-- A created range (`created`) bounds the walk itself: it is a range of the
-- index, so a list of the last hour reads only that hour's entries.
-- name: list_tasks_in_order
select * from cairnq_tasks
where true
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name || '' = :name::text -- when: name
  and root_id || '' = :root_id::text -- when: root_id
  and correlation_id || '' = :correlation_id::text -- when: correlation_id
  and (created_at_ms, id) < (:after_ms::bigint, :after_id::text) -- when: after
  and created_at_ms between :since_ms::bigint and :until_ms::bigint -- when: created
order by created_at_ms desc, id desc
limit :limit::bigint offset :offset::bigint

-- Bounded: counts at most :at_most matching rows, through the filters' own
-- indexes (the cursor and the created range are checked per row, never walked).
-- name: count_tasks
select count(*) as count from (
    select 1 from cairnq_tasks
    where true
      and status = :status -- when: status
      and queue = :queue -- when: queue
      and name = :name -- when: name
      and root_id = :root_id -- when: root_id
      and correlation_id = :correlation_id -- when: correlation_id
      and (created_at_ms + 0, id) < (:after_ms::bigint, :after_id::text) -- when: after
      and created_at_ms + 0 between :since_ms::bigint and :until_ms::bigint -- when: created
    limit :at_most::bigint
) as matching

-- How many rows a status and/or queue filter matches, exactly, from the
-- counter table of ext_0002_task_counts (a count is the sum of its rows).
-- name: read_matching_count
select coalesce(sum(n), 0)::bigint as count from cairnq_ext_task_counts
where true
  and status = :status -- when: status
  and queue = :queue -- when: queue

-- The tasks `:task_id` submitted: its chain's rows (the root index) whose
-- parent it is, newest first.
-- name: list_children
select * from cairnq_tasks
where root_id = (select root_id from cairnq_tasks where id = :task_id::text)
  and parent_id = :task_id::text
order by created_at_ms desc, id desc
limit :limit::bigint

-- name: count_tasks_by_queue_status
select queue, status, count(*) as count from cairnq_tasks
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
clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
queues(queue) as (
    select :queue::text -- when: queue
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
-- Per level: the bound (its first row's due time), then the soonest due
-- row up to it.
oldest(queue, id, due_at_ms) as (
    select levels.queue, soonest.id, soonest.due_at_ms
    from levels
    cross join lateral (
        select greatest(t.run_at_ms, t.created_at_ms) as bound from cairnq_tasks t
        where t.queue = levels.queue and t.status = 'queued' and t.priority = levels.priority
        order by t.run_at_ms, t.id limit 1
    ) as head
    cross join lateral (
        select t.id, greatest(t.run_at_ms, t.created_at_ms) as due_at_ms from cairnq_tasks t
        where t.queue = levels.queue and t.status = 'queued' and t.priority = levels.priority
          and t.run_at_ms <= head.bound
        order by 2, t.id limit 1
    ) as soonest
    where levels.priority is not null
)
select distinct on (queue) queue, id, (select now_ms from clock) - due_at_ms as age_ms from oldest
where due_at_ms <= (select now_ms from clock)
order by queue, due_at_ms, id

-- Bounded: reads at most :at_most index entries.
-- name: count_queued
select count(*) as count from (
    select 1 from cairnq_tasks where queue = :queue and status = 'queued' limit :at_most::bigint
) as queued

-- The same counts from the counter table of ext_0002_task_counts (kept by
-- triggers; a count is the sum of its rows): a few rows whatever the
-- table's size.
-- name: read_task_counts
select queue, status, sum(n)::bigint as count from cairnq_ext_task_counts
where queue = :queue -- when: queue
group by queue, status
having sum(n) > 0

-- count_queued from the counter table, capped as count_queued is.
-- name: read_queued_count
select least(coalesce(sum(n), 0), :at_most::bigint)::bigint as count from cairnq_ext_task_counts
where queue = :queue and status = 'queued'

-- Queued -> canceled now; running -> cancel requested (the first request's
-- time is kept); terminal rows match nothing.
-- name: cancel_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    status = case when t.status = 'queued' then 'canceled' else t.status end,
    completed_at_ms = case when t.status = 'queued' then clock.now_ms else t.completed_at_ms end,
    cancel_requested_at_ms = case when t.status = 'running'
                                  then coalesce(t.cancel_requested_at_ms, clock.now_ms)
                                  else t.cancel_requested_at_ms end,
    updated_at_ms = clock.now_ms
from clock
where t.status in ('queued', 'running')
  and t.id = :id -- when: by_id
  and t.id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key
returning t.*

-- Failed or canceled -> queued now; max_attempts is not consulted.
-- name: retry_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    attempt = 0, -- when: reset_attempt
    status = 'queued',
    error = null,
    worker_id = null,
    lease_until_ms = null,
    cancel_requested_at_ms = null,
    completed_at_ms = null,
    progress = null,
    message = null,
    run_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock
where t.status in ('failed', 'canceled')
  and t.id = :id -- when: by_id
  and t.id = (select task_id from cairnq_task_keys where key = :key) -- when: by_key
returning t.*

-- Oldest terminal rows completed strictly before the cutoff. Without a
-- status filter the status list is spelled exactly as in the partial
-- cairnq_tasks_queue_completed_idx, so a queue filter can use that index.
-- Rows another transaction holds are left for the next sweep; the rows are
-- picked in a MATERIALIZED CTE so the limit is applied exactly once (see
-- worker.sql).
-- name: purge_tasks
with doomed as materialized (
    select id from cairnq_tasks
    where status in ('succeeded', 'failed', 'canceled') -- when: any_status
    where status = :status -- when: status
      and completed_at_ms < (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint) - :older_than_ms::bigint
      and queue = :queue -- when: queue
      and name = :name -- when: name
    order by completed_at_ms
    limit :limit::bigint
    for update skip locked
)
delete from cairnq_tasks t using doomed where t.id = doomed.id
returning t.id

-- What purge_tasks would delete now, read without deleting (a purge's
-- preview, `cairnq purge --dry-run`): the same rows by the same rule, the
-- same order and bound, through the same index.
-- name: list_purgeable
select * from cairnq_tasks
where status in ('succeeded', 'failed', 'canceled') -- when: any_status
where status = :status -- when: status
  and completed_at_ms < (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint) - :older_than_ms::bigint
  and queue = :queue -- when: queue
  and name = :name -- when: name
order by completed_at_ms
limit :limit::bigint
