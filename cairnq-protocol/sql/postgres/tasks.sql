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

-- name: list_tasks
select * from cairnq_tasks
where true
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name = :name -- when: name
  and root_id = :root_id -- when: root_id
  and correlation_id = :correlation_id -- when: correlation_id
  and (created_at_ms, id) < (:after_ms::bigint, :after_id::text) -- when: after
order by created_at_ms desc, id desc
limit :limit::bigint offset :offset::bigint

-- name: count_tasks_by_queue_status
select queue, status, count(*) as count from cairnq_tasks
where queue = :queue -- when: queue
group by queue, status

-- Per queue, how long its oldest due queued task has waited since it
-- became due (the queue-age gauge).
-- name: oldest_due_by_queue
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
select queue, (select now_ms from clock) - min(run_at_ms) as age_ms from cairnq_tasks
where status = 'queued' and run_at_ms <= (select now_ms from clock)
  and queue = :queue -- when: queue
group by queue

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
