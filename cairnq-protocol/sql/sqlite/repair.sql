-- Repairs of rows no ordinary operation would ever move (a foreign or
-- broken writer left them so). Each reads only the claim index prefix
-- (queue, status) of the queues asked, never the whole table.
--
-- Writes to cairnq_tasks say `or fail`: each runs inside a transaction the
-- SDK rolls back when it fails.

-- A claimed row the SDK cannot decode fails at once, in the claim's own
-- transaction and owned by the claimer, instead of being drawn again by
-- every claim after it. :error names the column and why.
-- name: fail_undecodable_task
update or fail cairnq_tasks set
    status = 'failed',
    error = :error,
    lease_until_ms = null,
    completed_at_ms = :now_ms,
    updated_at_ms = :now_ms
where id = :id and status = 'running' and worker_id = :worker_id

-- A running row without a lease could never expire. Giving it a lease that
-- ends now hands it to ordinary lease recovery, which runs first in the
-- next claim with the usual rules (cancel wins, attempts left -> queued,
-- else failed).
-- name: expire_unleased_tasks
update or fail cairnq_tasks set lease_until_ms = :now_ms, updated_at_ms = :now_ms
where queue in (select value from json_each(:queues))
  and status = 'running' and lease_until_ms is null
returning id

-- A queued row without run_at could never be claimed: due now.
-- name: schedule_unscheduled_tasks
update or fail cairnq_tasks set run_at_ms = :now_ms, updated_at_ms = :now_ms
where queue in (select value from json_each(:queues))
  and status = 'queued' and run_at_ms is null
returning id
