-- Flow control (extension ext_0006, README "Flow control"). A limit row is
-- read back as its columns, as schedules are; a row whose limit key is a
-- task's (a JSON value: text or a number) is read as one JSON object in a
-- column named id, so the key keeps its JSON type. A task's
-- limit key is `json_extract(metadata, '$.limit_key')`; the walk reads it
-- as text, `coalesce(cast(... as text), '')`, spelled exactly as the
-- queued index of ext_0007 is, so the planner matches it.

-- name: select_limits
select key, concurrency, rate_count, rate_period_ms, burst, updated_at_ms
from cairnq_ext_limits
where true
  and key = :key -- when: by_key
order by key

-- Whether any limit is set: a claim takes the limit-aware path only then.
-- name: any_limits
select cast(exists (select 1 from cairnq_ext_limits) as text) as id

-- name: upsert_limit
insert into cairnq_ext_limits (key, concurrency, rate_count, rate_period_ms, burst, updated_at_ms)
values (:key, :concurrency, :rate_count, :rate_period_ms, :burst, :now_ms)
on conflict (key) do update set
    concurrency = excluded.concurrency, rate_count = excluded.rate_count,
    rate_period_ms = excluded.rate_period_ms, burst = excluded.burst, updated_at_ms = excluded.updated_at_ms
returning key, concurrency, rate_count, rate_period_ms, burst, updated_at_ms

-- name: delete_limit
delete from cairnq_ext_limits where key = :key returning key as id

-- How many rows of each limit key run now, from the running rows alone:
-- the only count there is. The index's second term, `priority is not
-- null`, is met by a comparison on priority (a NOT NULL column's `is not
-- null` is folded away before the index is matched).
-- name: count_running_by_limit_key
select json_object('key', coalesce(cast(json_extract(metadata, '$.limit_key') as text), ''), 'n', count(*)) as id
from cairnq_tasks
where status = 'running' and priority >= -2147483648
  and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') <> ''
group by coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')

-- The same for the keys a claim meets, in the claim: a range each of the
-- running-key index of ext_0007 (named: with few rows running the planner
-- would read every running row instead).
-- name: count_running_of_keys
select json_object('key', coalesce(cast(json_extract(metadata, '$.limit_key') as text), ''), 'n', count(*)) as id
from cairnq_tasks indexed by cairnq_ext_tasks_running_key_idx
where status = 'running' and priority >= -2147483648
  and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') <> ''
  and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') in (select value from json_each(:keys))
group by coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')

-- The rate state that can still hold a start back after :after_ms (a
-- theoretical arrival time before it is the same as none). Not :now_ms:
-- a wait hint asks from the time of the claim that found nothing, before
-- the store's now, and SQLite binds its own now to every :now_ms.
-- name: select_limit_state
select json_object('key', key, 'tat_ms', tat_ms) as id
from cairnq_ext_limit_state
where tat_ms > :after_ms
  and key in (select value from json_each(:keys)) -- when: keys

-- :keys and :tats are parallel JSON arrays.
-- name: upsert_limit_state
insert into cairnq_ext_limit_state (key, tat_ms)
select k.value, t.value from json_each(:keys) k join json_each(:tats) t on t.key = k.key
where true
on conflict (key) do update set tat_ms = excluded.tat_ms
returning key as id

-- The best due rows of a draw whose limit key is not in :blocked (a JSON
-- array of keys at their limit), in claim order, each with its key. Read
-- only: the claim picks from these, then claims by id.
-- name: select_limit_candidates
select json_object('id', id, 'key', json_extract(metadata, '$.limit_key')) as id
from cairnq_tasks
where queue = :queue -- when: one_queue
where queue in (select value from json_each(:queues)) -- when: many_queues
  and status = 'queued'
  and name = :name -- when: one_name
  and name in (select value from json_each(:names)) -- when: many_names
  and run_at_ms <= :now_ms
  and (json_extract(metadata, '$.limit_key') is null
       or json_extract(metadata, '$.limit_key') not in (select value from json_each(:blocked)))
order by priority desc, run_at_ms, id
limit :limit

-- The rows picked, claimed as claim_due_tasks claims (only those still
-- queued).
-- name: claim_tasks_by_id
update or fail cairnq_tasks set
    status = 'running',
    worker_id = :worker_id,
    lease_until_ms = :now_ms + :lease_ms,
    attempt = attempt + 1,
    updated_at_ms = :now_ms
where id in (select value from json_each(:ids)) and +status = 'queued'
returning *

-- The groups of one queue's queued rows after the cursor (:priority,
-- :after), in the order of the queued index of ext_0007 (priority desc,
-- then limit key as text, the empty text for none), at most :max_groups,
-- each as [priority, key]. A skip scan: every step is a few seeks in that
-- index, however many rows a group holds, so a key with a huge throttled
-- backlog costs one step. Start above the top priority (2147483648, '')
-- to begin with the first group.
-- name: select_limit_groups
with recursive groups(priority, lk, n) as (
    select :priority, :after, 0
    union all
    select
        case when (select min(coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')) from cairnq_tasks
                   where queue = :queue and status = 'queued' and priority = groups.priority
                     and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') > groups.lk) is not null
             then groups.priority
             else (select max(priority) from cairnq_tasks
                   where queue = :queue and status = 'queued' and priority < groups.priority) end,
        coalesce(
            (select min(coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')) from cairnq_tasks
             where queue = :queue and status = 'queued' and priority = groups.priority
               and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') > groups.lk),
            (select min(coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')) from cairnq_tasks
             where queue = :queue and status = 'queued' and priority = (
                 select max(priority) from cairnq_tasks
                 where queue = :queue and status = 'queued' and priority < groups.priority))),
        n + 1
    from groups
    where n < :max_groups and groups.priority is not null
)
select json_array(priority, lk) as id from groups where n > 0 and priority is not null order by n

-- One group's due rows (see select_limit_groups), oldest first, at most
-- :limit: a range of the queued index (the unary `+` keeps the name off
-- the claim name index, whose range holds every key's rows of the name).
-- In this process a statement is a call, so a range read per group (and
-- claim_tasks_by_id) beats claim_limit_groups, which sorts what it reads.
-- name: select_limit_group_rows
select id from cairnq_tasks
where queue = :queue and status = 'queued' and priority = :priority
  and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') = :key
  and run_at_ms <= :now_ms
  and +name = :name -- when: one_name
  and +name in (select value from json_each(:names)) -- when: many_names
order by run_at_ms, id
limit :limit

-- Claims, in one statement, the due rows some groups (see
-- select_limit_groups) of one priority may start: the group :keys[i] (a
-- key as text, the empty text for none) offers at most :limits[i] rows,
-- oldest first, a range of the queued index each (a LIMIT cannot name an
-- outer column here: each range stops at the largest limit, and the window
-- trims each group to its own). The groups take turns (every group's
-- first row, then every group's second, ..., in the order given) up to
-- :need rows, claimed as claim_due_tasks claims.
-- name: claim_limit_groups
update or fail cairnq_tasks set
    status = 'running',
    worker_id = :worker_id,
    lease_until_ms = :now_ms + :lease_ms,
    attempt = attempt + 1,
    updated_at_ms = :now_ms
where id in (
    select id from (
        select t.id, k.key as ord, :limits ->> k.key as n,
            row_number() over (partition by k.key order by t.run_at_ms, t.id) as turn
        from json_each(:keys) k
        cross join cairnq_tasks t on t.id in (
            select id from cairnq_tasks
            where queue = :queue and status = 'queued' and priority = :priority
              and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') = k.value
              and run_at_ms <= :now_ms
              and +name = :name -- when: one_name
              and +name in (select value from json_each(:names)) -- when: many_names
            order by run_at_ms, id
            limit (select max(value) from json_each(:limits)))
    )
    where turn <= n
    order by turn, ord
    limit :need)
returning *

-- How many rows of each limit key are queued (due or not), from the queued
-- index of ext_0007 alone.
-- name: count_queued_by_limit_key
select json_object('key', coalesce(cast(json_extract(metadata, '$.limit_key') as text), ''), 'n', count(*)) as id
from cairnq_tasks
where status = 'queued' and priority >= -2147483648
  and coalesce(cast(json_extract(metadata, '$.limit_key') as text), '') <> ''
group by coalesce(cast(json_extract(metadata, '$.limit_key') as text), '')
