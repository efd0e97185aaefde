-- Worker-side statements: the claim gate, lease recovery, claims, leases
-- and settling. Queue and name filters come in three forms each: one value
-- (`one_queue` / `one_name`, equality so the claim indexes are read in
-- order), many values (`many_queues` / `many_names`, a JSON array), or no
-- name filter at all. Worker writes are ownership-checked: status running,
-- worker_id = caller, lease_until_ms > now.
--
-- Writes to cairnq_tasks say `or fail`: every write runs inside a savepoint
-- or transaction of its own that the SDK rolls back when the write fails,
-- so SQLite need not keep a per-statement undo journal as well (with the
-- default `or abort` it copies every page a statement touches first).

-- Read-only: anything due here, or any expired lease anywhere?
-- name: probe_claimable
select exists (
    select 1 from cairnq_tasks
    where queue = :queue -- when: one_queue
    where queue in (select value from json_each(:queues)) -- when: many_queues
      and status = 'queued'
      and name = :name -- when: one_name
      and name in (select value from json_each(:names)) -- when: many_names
      and run_at_ms <= :now_ms
) or exists (
    select 1 from cairnq_tasks
    where status = 'running' and lease_until_ms is not null and lease_until_ms <= :now_ms
)

-- Lease recovery, in this order, first thing in every claim transaction.
-- A cancel was requested: cancel wins.
-- name: recover_canceled_leases
update or fail cairnq_tasks set
    status = 'canceled',
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
where status = 'running' and lease_until_ms is not null and lease_until_ms <= :now_ms
  and cancel_requested_at_ms is not null
returning id, queue

-- Attempts left: back to queued, due now.
-- name: recover_requeued_leases
update or fail cairnq_tasks set
    status = 'queued',
    worker_id = null,
    lease_until_ms = null,
    progress = null,
    message = null,
    run_at_ms = :now_ms,
    updated_at_ms = :now_ms
where status = 'running' and lease_until_ms is not null and lease_until_ms <= :now_ms
  and cancel_requested_at_ms is null and attempt < max_attempts
returning id, queue

-- Attempts used up: failed with the lease_expired envelope, worker kept.
-- name: recover_failed_leases
update or fail cairnq_tasks set
    status = 'failed',
    error = :error,
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
where status = 'running' and lease_until_ms is not null and lease_until_ms <= :now_ms
  and cancel_requested_at_ms is null and attempt >= max_attempts
returning id, queue

-- One draw: the best due rows, priority desc, run_at_ms asc, id asc. With
-- `unlimited_only` it takes nothing while any limit is set (extension
-- ext_0006): the claim then draws limit-aware (limits.sql) instead. The
-- guard is in the LIMIT, evaluated once: as a WHERE term it was checked
-- row after row, walking every due row.
-- name: claim_due_tasks
update or fail cairnq_tasks set
    status = 'running',
    worker_id = :worker_id,
    lease_until_ms = :now_ms + :lease_ms,
    attempt = attempt + 1,
    updated_at_ms = :now_ms
where id in (
    select id from cairnq_tasks
    where queue = :queue -- when: one_queue
    where queue in (select value from json_each(:queues)) -- when: many_queues
      and status = 'queued'
      and name = :name -- when: one_name
      and name in (select value from json_each(:names)) -- when: many_names
      and run_at_ms <= :now_ms
    order by priority desc, run_at_ms, id
    limit :limit
      * (not exists (select 1 from cairnq_ext_limits)) -- when: unlimited_only
)
returning *

-- name: heartbeat_task
update or fail cairnq_tasks set lease_until_ms = :now_ms + :lease_ms, updated_at_ms = :now_ms
where id = :id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
returning *

-- Returns only the rows still owned; the caller restores the asked order.
-- The unary `+` keeps the other terms off their indexes: the rows are
-- found by primary key, never by scanning every running or leased row.
-- name: heartbeat_tasks
update or fail cairnq_tasks set lease_until_ms = :now_ms + :lease_ms, updated_at_ms = :now_ms
where id in (select value from json_each(:ids))
  and +status = 'running' and +worker_id = :worker_id and +lease_until_ms > :now_ms
returning id, cancel_requested_at_ms

-- A null argument leaves the old value alone.
-- name: update_progress
update or fail cairnq_tasks set
    progress = coalesce(:progress, progress),
    message = coalesce(:message, message),
    updated_at_ms = :now_ms
where id = :id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
returning *

-- The raw primitive: ignores a pending cancel.
-- name: succeed_task
update or fail cairnq_tasks set
    status = 'succeeded',
    result = :result,
    progress = 1.0,
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
where id = :id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
returning *

-- Like succeed_task, unless a cancel was requested: then canceled, with
-- result and progress left as they were.
-- name: complete_task
update or fail cairnq_tasks set
    status = iif(cancel_requested_at_ms is null, 'succeeded', 'canceled'),
    result = iif(cancel_requested_at_ms is null, :result, result),
    progress = iif(cancel_requested_at_ms is null, 1.0, progress),
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
where id = :id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
returning *

-- complete_task for many tasks of one worker in one statement. :settles
-- is a JSON array of [id, result] pairs; the rows are found by primary key
-- (the unary `+` keeps the other terms off their indexes). Returns only the
-- rows settled: an absent id lost its lease.
-- name: complete_tasks
update or fail cairnq_tasks set
    status = iif(cancel_requested_at_ms is null, 'succeeded', 'canceled'),
    result = iif(cancel_requested_at_ms is null, settle.result, cairnq_tasks.result),
    progress = iif(cancel_requested_at_ms is null, 1.0, progress),
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
from (select value ->> 0 as id, value -> 1 as result from json_each(:settles)) as settle
where cairnq_tasks.id = settle.id
  and +status = 'running' and +worker_id = :worker_id and +lease_until_ms > :now_ms
returning id, status

-- Cancel requested -> canceled; retryable with attempts left -> queued after
-- :delay_ms (worker, progress, message cleared); else failed. The error is
-- recorded on every branch. `branch.requeue` is decided once per row.
-- name: fail_task
update or fail cairnq_tasks set
    status = case when branch.requeue then 'queued'
                  when cancel_requested_at_ms is not null then 'canceled'
                  else 'failed' end,
    error = :error,
    worker_id = iif(branch.requeue, null, worker_id),
    progress = iif(branch.requeue, null, progress),
    message = iif(branch.requeue, null, message),
    run_at_ms = iif(branch.requeue, :now_ms + :delay_ms, run_at_ms),
    completed_at_ms = iif(branch.requeue, null, :now_ms),
    lease_until_ms = null,
    updated_at_ms = :now_ms
from (
    select cancel_requested_at_ms is null and :retryable = 1 and attempt < max_attempts as requeue
    from cairnq_tasks where id = :id
) as branch
where id = :id and status = 'running' and worker_id = :worker_id and lease_until_ms > :now_ms
returning *
