-- Schedules (extension ext_0001, README "Schedules"). A schedule row is
-- read back as its columns, by name (cairnq-sql decodes it once for every
-- dialect). :now_ms comes from the store's clock: due-ness on SQLite is
-- the store clock's.

-- The clock every due check and next-fire computation of one pass uses.
-- name: select_clock
select :now_ms as now_ms

-- name: select_schedules
select name, task_name, queue, payload, priority, max_attempts, metadata, spec, tz, next_fire_ms, last_slot_ms, missed, catch_up, catch_up_window_ms, catch_up_max, overlap, jitter_ms, paused, owner, created_at_ms, updated_at_ms
from cairnq_ext_schedules
where true
  and name = :name -- when: by_name
  and paused = 0 and next_fire_ms <= :now_ms -- when: due
-- The due check walks the due index (ordering by name would scan the
-- whole table: 10,000 rows a second for an idle worker).
order by next_fire_ms, name -- when: due
order by name -- when: listing

-- Creates or updates a schedule. An unchanged spec and zone keep the next
-- fire already stored (another process may have advanced it meanwhile); a
-- changed one takes the next fire computed for it. Paused and the fire
-- history stay as they are.
-- name: upsert_schedule
insert into cairnq_ext_schedules (
    name, task_name, queue, payload, priority, max_attempts, metadata, spec, tz, next_fire_ms,
    catch_up, catch_up_window_ms, catch_up_max, overlap, jitter_ms, paused, owner, created_at_ms, updated_at_ms
) values (
    :name, :task_name, :queue, :payload, :priority, :max_attempts, :metadata, :spec, :tz, :next_fire_ms,
    :catch_up, :catch_up_window_ms, :catch_up_max, :overlap, :jitter_ms, 0, :owner, :now_ms, :now_ms
)
on conflict (name) do update set
    task_name = excluded.task_name, queue = excluded.queue, payload = excluded.payload,
    priority = excluded.priority, max_attempts = excluded.max_attempts, metadata = excluded.metadata,
    next_fire_ms = case
        when cairnq_ext_schedules.spec = excluded.spec and cairnq_ext_schedules.tz = excluded.tz
        then cairnq_ext_schedules.next_fire_ms else excluded.next_fire_ms end,
    spec = excluded.spec, tz = excluded.tz, catch_up = excluded.catch_up,
    catch_up_window_ms = excluded.catch_up_window_ms, catch_up_max = excluded.catch_up_max,
    overlap = excluded.overlap, jitter_ms = excluded.jitter_ms, owner = excluded.owner,
    updated_at_ms = excluded.updated_at_ms
returning name, task_name, queue, payload, priority, max_attempts, metadata, spec, tz, next_fire_ms, last_slot_ms, missed, catch_up, catch_up_window_ms, catch_up_max, overlap, jitter_ms, paused, owner, created_at_ms, updated_at_ms

-- name: delete_schedule
delete from cairnq_ext_schedules where name = :name returning name as id

-- Pauses or resumes; a resume takes the next fire computed from now.
-- name: pause_schedule
update cairnq_ext_schedules set
    paused = :paused, next_fire_ms = coalesce(:next_fire_ms, next_fire_ms), updated_at_ms = :now_ms
where name = :name
returning name, task_name, queue, payload, priority, max_attempts, metadata, spec, tz, next_fire_ms, last_slot_ms, missed, catch_up, catch_up_window_ms, catch_up_max, overlap, jitter_ms, paused, owner, created_at_ms, updated_at_ms

-- One fire's compare-and-set: moves the next fire on only if the row still
-- holds the slot the firer read, so of many processes exactly one wins it.
-- name: advance_schedule
update cairnq_ext_schedules set
    next_fire_ms = :next_fire_ms,
    last_slot_ms = coalesce(:last_slot_ms, last_slot_ms),
    missed = missed + :missed,
    updated_at_ms = :now_ms
where name = :name and next_fire_ms = :expected_ms
  and paused = 0 -- when: unpaused
returning name as id
