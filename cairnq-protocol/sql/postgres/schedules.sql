-- Schedules (extension ext_0001, README "Schedules"). A schedule row is
-- read back as its columns, by name (cairnq-sql decodes it once for every
-- dialect). Due-ness is the database
-- clock's: a pass reads it once (select_clock) and passes it as :now_ms.

-- name: select_clock
select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms

-- name: select_schedules
select s.*
from cairnq_ext_schedules s
where true
  and s.name = :name::text -- when: by_name
  and not s.paused and s.next_fire_ms <= :now_ms::bigint -- when: due
-- The due check walks the due index (ordering by name would scan the
-- whole table: 10,000 rows a second for an idle worker).
order by s.next_fire_ms, s.name -- when: due
order by s.name -- when: listing

-- Creates or updates a schedule. An unchanged spec and zone keep the next
-- fire already stored (another process may have advanced it meanwhile); a
-- changed one takes the next fire computed for it. Paused and the fire
-- history stay as they are.
-- name: upsert_schedule
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_ext_schedules as s (
    name, task_name, queue, payload, priority, max_attempts, metadata, spec, tz, next_fire_ms,
    catch_up, catch_up_window_ms, catch_up_max, overlap, jitter_ms, paused, owner, created_at_ms, updated_at_ms
)
select
    :name::text, :task_name::text, :queue::text, :payload::text, :priority::integer, :max_attempts::integer,
    :metadata::text, :spec::text, :tz::text, :next_fire_ms::bigint, :catch_up::text, :catch_up_window_ms::bigint,
    :catch_up_max::integer, :overlap::text, :jitter_ms::bigint, false, :owner::text, now_ms, now_ms
from clock
on conflict (name) do update set
    task_name = excluded.task_name, queue = excluded.queue, payload = excluded.payload,
    priority = excluded.priority, max_attempts = excluded.max_attempts, metadata = excluded.metadata,
    next_fire_ms = case
        when s.spec = excluded.spec and s.tz = excluded.tz then s.next_fire_ms else excluded.next_fire_ms end,
    spec = excluded.spec, tz = excluded.tz, catch_up = excluded.catch_up,
    catch_up_window_ms = excluded.catch_up_window_ms, catch_up_max = excluded.catch_up_max,
    overlap = excluded.overlap, jitter_ms = excluded.jitter_ms, owner = excluded.owner,
    updated_at_ms = excluded.updated_at_ms
returning s.*

-- name: delete_schedule
delete from cairnq_ext_schedules where name = :name::text returning name as id

-- Pauses or resumes; a resume takes the next fire computed from now.
-- name: pause_schedule
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_ext_schedules s set
    paused = :paused::boolean,
    next_fire_ms = coalesce(:next_fire_ms::bigint, s.next_fire_ms),
    updated_at_ms = clock.now_ms
from clock
where s.name = :name::text
returning s.*

-- One fire's compare-and-set: moves the next fire on only if the row still
-- holds the slot the firer read, so of many processes exactly one wins it.
-- name: advance_schedule
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_ext_schedules s set
    next_fire_ms = :next_fire_ms::bigint,
    last_slot_ms = coalesce(:last_slot_ms::bigint, s.last_slot_ms),
    missed = s.missed + :missed::bigint,
    updated_at_ms = clock.now_ms
from clock
where s.name = :name::text and s.next_fire_ms = :expected_ms::bigint
  and not s.paused -- when: unpaused
returning s.name as id
