-- Repairs of rows no ordinary operation would ever move (a foreign or
-- broken writer left them so). Each reads only the claim index prefix
-- (queue, status) of the queues asked, never the whole table, and reads
-- the database clock once.

-- A claimed row the SDK cannot decode fails at once, in the claim's own
-- transaction and owned by the claimer, instead of being drawn again by
-- every claim after it. :error names the column and why.
-- name: fail_undecodable_task
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    status = 'failed',
    error = :error::jsonb,
    lease_until_ms = null,
    completed_at_ms = clock.now_ms,
    updated_at_ms = clock.now_ms
from clock
where t.id = :id and t.status || '' = 'running' and t.worker_id = :worker_id

-- A running row without a lease could never expire. Giving it a lease that
-- ends now hands it to ordinary lease recovery, which runs first in the
-- next claim with the usual rules (cancel wins, attempts left -> queued,
-- else failed).
-- name: expire_unleased_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set lease_until_ms = clock.now_ms, updated_at_ms = clock.now_ms
from clock
where t.queue = any(:queues::text[]) and t.status = 'running' and t.lease_until_ms is null
returning t.id

-- A queued row without run_at could never be claimed: due now.
-- name: schedule_unscheduled_tasks
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set run_at_ms = clock.now_ms, updated_at_ms = clock.now_ms
from clock
where t.queue = any(:queues::text[]) and t.status = 'queued' and t.run_at_ms is null
returning t.id
