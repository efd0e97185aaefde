-- Worker-side statements: the claim gate, lease recovery, claims, leases
-- and settling. Queue and name filters come in three forms each: one value
-- (`one_queue` / `one_name`, equality so the claim indexes are read in
-- order), many values (`many_queues` / `many_names`, a text[] array), or no
-- name filter at all. Worker writes are ownership-checked: status running,
-- worker_id = caller, lease_until_ms > now, with now read from the database
-- clock once per statement. Rows to lock are picked in a MATERIALIZED CTE
-- and joined by id: as `id in (subquery ... for update skip locked)` the
-- planner may rescan the subquery once per outer row, and a rescan skips the
-- rows this very statement already updated, so a claim could take fewer rows
-- than were due. Conditions on the row's own columns are written
-- inline in the SET list: under READ COMMITTED an UPDATE re-reads a row that
-- changed while it waited for the row lock, and only expressions over the
-- target row see that newer version.
--
-- Writes of one task by id say `status || ''` and `lease_until_ms + 0`:
-- spelled plainly, the generic plan a pooled connection caches may read the
-- partial lease index (every running row) instead of the primary key.

-- Read-only: anything due here, or any expired lease anywhere?
-- name: probe_claimable
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
select exists (
    select 1 from cairnq_tasks
    where queue = :queue -- when: one_queue
    where queue = any(:queues::text[]) -- when: many_queues
      and status = 'queued'
      and name = :name -- when: one_name
      and name = any(:names::text[]) -- when: many_names
      and run_at_ms <= (select now_ms from clock)
) or exists (
    select 1 from cairnq_tasks
    where status = 'running' and lease_until_ms is not null and lease_until_ms <= (select now_ms from clock)
)

-- Lease recovery, in this order, first thing in every claim transaction.
-- Rows another claimer is recovering right now are skipped, not waited for.
-- A cancel was requested: cancel wins.
-- name: recover_canceled_leases
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
picked as materialized (
    select id from cairnq_tasks
    where status = 'running' and lease_until_ms is not null and lease_until_ms <= (select now_ms from clock)
      and cancel_requested_at_ms is not null
    for update skip locked
)
update cairnq_tasks t set
    status = 'canceled',
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock, picked
where t.id = picked.id
returning t.id, t.queue

-- Attempts left: back to queued, due now.
-- name: recover_requeued_leases
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
picked as materialized (
    select id from cairnq_tasks
    where status = 'running' and lease_until_ms is not null and lease_until_ms <= (select now_ms from clock)
      and cancel_requested_at_ms is null and attempt < max_attempts
    for update skip locked
)
update cairnq_tasks t set
    status = 'queued',
    worker_id = null,
    lease_until_ms = null,
    progress = null,
    message = null,
    run_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock, picked
where t.id = picked.id
returning t.id, t.queue

-- Attempts used up: failed with the lease_expired envelope, worker kept.
-- name: recover_failed_leases
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
picked as materialized (
    select id from cairnq_tasks
    where status = 'running' and lease_until_ms is not null and lease_until_ms <= (select now_ms from clock)
      and cancel_requested_at_ms is null and attempt >= max_attempts
    for update skip locked
)
update cairnq_tasks t set
    status = 'failed',
    error = :error::jsonb,
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock, picked
where t.id = picked.id
returning t.id, t.queue

-- One draw: the best due rows, priority desc, run_at_ms asc, id asc; rows
-- another claimer holds are skipped.
-- With `unlimited_only` it takes nothing while any limit is set (extension
-- ext_0006): the claim then draws limit-aware (limits.sql) instead. The
-- guard is in the LIMIT, evaluated once, never row by row.
-- name: claim_due_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
picked as materialized (
    select id from cairnq_tasks
    where queue = :queue -- when: one_queue
    where queue = any(:queues::text[]) -- when: many_queues
      and status = 'queued'
      and name = :name -- when: one_name
      and name = any(:names::text[]) -- when: many_names
      and run_at_ms <= (select now_ms from clock)
    order by priority desc, run_at_ms, id
    limit :limit::bigint
      * (not exists (select 1 from cairnq_ext_limits))::int -- when: unlimited_only
    for update skip locked
)
update cairnq_tasks t set
    status = 'running',
    worker_id = :worker_id,
    lease_until_ms = clock.now_ms + :lease_ms::bigint,
    attempt = t.attempt + 1,
    updated_at_ms = clock.now_ms
from clock, picked
where t.id = picked.id
returning t.*

-- name: heartbeat_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set lease_until_ms = clock.now_ms + :lease_ms::bigint, updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id and t.lease_until_ms + 0 > clock.now_ms
returning t.*

-- Returns only the rows still owned; the caller restores the asked order.
-- `status || ''`: as in complete_tasks, the rows are found by primary key.
-- The rows are locked in id order first (`owned`), as complete_tasks
-- locks them: a worker heartbeats and completes the same rows at once on
-- two connections, and two statements that lock a set of rows each in
-- the order their plans happen to read it (the key's order, the heap's)
-- can deadlock.
-- name: heartbeat_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
owned as materialized (
    select id from cairnq_tasks
    where id = any(:ids::text[])
      and status || '' = 'running' and worker_id = :worker_id and lease_until_ms > (select now_ms from clock)
    order by id
    for update
)
update cairnq_tasks t set lease_until_ms = clock.now_ms + :lease_ms::bigint, updated_at_ms = clock.now_ms
from clock, owned
where t.id = owned.id
returning t.id, t.cancel_requested_at_ms

-- A null argument leaves the old value alone.
-- name: update_progress
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    progress = coalesce(:progress::double precision, t.progress),
    message = coalesce(:message::text, t.message),
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id and t.lease_until_ms + 0 > clock.now_ms
returning t.*

-- The raw primitive: ignores a pending cancel.
-- name: succeed_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    status = 'succeeded',
    result = :result::jsonb,
    progress = 1.0,
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id and t.lease_until_ms + 0 > clock.now_ms
returning t.*

-- Like succeed_task, unless a cancel was requested: then canceled, with
-- result and progress left as they were.
-- name: complete_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    status = case when t.cancel_requested_at_ms is null then 'succeeded' else 'canceled' end,
    result = case when t.cancel_requested_at_ms is null then :result::jsonb else t.result end,
    progress = case when t.cancel_requested_at_ms is null then 1.0 else t.progress end,
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id and t.lease_until_ms + 0 > clock.now_ms
returning t.*

-- complete_task for many tasks of one worker in one statement: :results
-- maps each task id in :ids to its result. Returns only the rows settled:
-- an absent id lost its lease. The rows are found by primary key
-- (`= any`); `status || ''` keeps the status and lease indexes out of
-- the plan, as a busy worker leaves thousands of dead 'running' entries in
-- them between vacuums (and a fresh table has no statistics to say so).
-- The rows are locked in id order first, as heartbeat_tasks locks them.
-- name: complete_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
owned as materialized (
    select id from cairnq_tasks
    where id = any(:ids::text[])
      and status || '' = 'running' and worker_id = :worker_id and lease_until_ms > (select now_ms from clock)
    order by id
    for update
)
update cairnq_tasks t set
    status = case when t.cancel_requested_at_ms is null then 'succeeded' else 'canceled' end,
    result = case when t.cancel_requested_at_ms is null then :results::jsonb -> t.id else t.result end,
    progress = case when t.cancel_requested_at_ms is null then 1.0 else t.progress end,
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock, owned
where t.id = owned.id
returning t.id, t.status

-- Cancel requested -> canceled; retryable with attempts left -> queued after
-- :delay_ms (worker, progress, message cleared); else failed. The error is
-- recorded on every branch. `branch.requeue` is decided once per row, from
-- the locked row version (see the note at the top).
-- name: fail_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    (status, worker_id, progress, message, run_at_ms, completed_at_ms) = (
        select case when branch.requeue then 'queued'
                    when t.cancel_requested_at_ms is not null then 'canceled'
                    else 'failed' end,
               case when branch.requeue then null else t.worker_id end,
               case when branch.requeue then null else t.progress end,
               case when branch.requeue then null else t.message end,
               case when branch.requeue then clock.now_ms + :delay_ms::bigint else t.run_at_ms end,
               case when branch.requeue then null else clock.now_ms end
        from (select t.cancel_requested_at_ms is null and :retryable::boolean and t.attempt < t.max_attempts
              as requeue) as branch
    ),
    error = :error::jsonb,
    lease_until_ms = null,
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id and t.lease_until_ms + 0 > clock.now_ms
returning t.*
