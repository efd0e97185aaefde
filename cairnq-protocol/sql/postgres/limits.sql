-- Flow control (extension ext_0006, README "Flow control"). A limit row is
-- read back as its columns, as schedules are; a row whose limit key is a
-- task's (a JSON value: text or a number) is read as one JSON object in a
-- column named id, so the key keeps its JSON type. A task's
-- limit key is `metadata ->> 'limit_key'`, spelled exactly as the running
-- index of ext_0006 is, so the planner matches it. Times are the database
-- clock's.

-- name: select_limits
select key, concurrency, rate_count, rate_period_ms, burst, updated_at_ms
from cairnq_ext_limits
where true
  and key = :key::text -- when: by_key
order by key

-- Whether any limit is set: a claim takes the limit-aware path only then.
-- name: any_limits
select (exists (select 1 from cairnq_ext_limits))::int::text as id

-- name: upsert_limit
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
insert into cairnq_ext_limits as l (key, concurrency, rate_count, rate_period_ms, burst, updated_at_ms)
select :key::text, :concurrency::integer, :rate_count::integer, :rate_period_ms::bigint, :burst::integer, now_ms
from clock
on conflict (key) do update set
    concurrency = excluded.concurrency, rate_count = excluded.rate_count,
    rate_period_ms = excluded.rate_period_ms, burst = excluded.burst, updated_at_ms = excluded.updated_at_ms
returning l.key, l.concurrency, l.rate_count, l.rate_period_ms, l.burst, l.updated_at_ms

-- name: delete_limit
delete from cairnq_ext_limits where key = :key::text returning key as id

-- How many rows of each limit key run now, from the running rows alone:
-- the only count there is.
-- name: count_running_by_limit_key
select json_build_object('key', metadata ->> 'limit_key', 'n', count(*))::text as id
from cairnq_tasks
where status = 'running' and (metadata ->> 'limit_key') is not null
group by metadata ->> 'limit_key'

-- The same for the keys a claim meets, in the claim: a range of the
-- running-key index of ext_0006 per key, read as an index scan. A claimed
-- row leaves that index only when vacuum comes, so the range also holds
-- the entries of the key's rows that have run since; an index scan marks
-- such an entry dead when it first finds its row gone, and later scans
-- step over it, while a bitmap scan (the plan of one statement over all
-- the keys) visited every one of them in every claim (3.0-4.0 ms a claim
-- of a never-binding limited burn-down, 1.8-2.4 ms this way).
-- name: count_running_of_keys
select json_build_object('key', k, 'n', n)::text as id
from unnest(:keys::text[]) k
cross join lateral (
    select count(*) as n from cairnq_tasks
    where status = 'running' and (metadata ->> 'limit_key') is not null and (metadata ->> 'limit_key') = k
) c
where n > 0

-- The rate state that can still hold a start back after :after_ms (a
-- theoretical arrival time before it is the same as none; a wait hint
-- asks from the time of the claim that found nothing).
-- name: select_limit_state
select json_build_object('key', key, 'tat_ms', tat_ms)::text as id
from cairnq_ext_limit_state
where tat_ms > :after_ms::bigint
  and key = any(:keys::text[]) -- when: keys

-- name: upsert_limit_state
insert into cairnq_ext_limit_state (key, tat_ms)
select * from unnest(:keys::text[], :tats::bigint[])
on conflict (key) do update set tat_ms = excluded.tat_ms
returning key as id

-- The best due rows of a draw whose limit key is not in :blocked (keys at
-- their limit), in claim order, each with its key, locked (skipping rows
-- another claimer holds, as claim_due_tasks does): the claim picks from
-- these, then claims by id.
-- name: select_limit_candidates
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
select json_build_object('id', id, 'key', metadata -> 'limit_key')::text as id
from cairnq_tasks
where queue = :queue -- when: one_queue
where queue = any(:queues::text[]) -- when: many_queues
  and status = 'queued'
  and name = :name -- when: one_name
  and name = any(:names::text[]) -- when: many_names
  and run_at_ms <= (select now_ms from clock)
  and not coalesce((metadata ->> 'limit_key') = any(:blocked::text[]), false)
order by priority desc, run_at_ms, id
limit :limit::bigint
for update skip locked

-- The rows picked, claimed as claim_due_tasks claims. The selects that
-- picked them (select_limit_candidates, select_limit_group_rows) locked
-- them for this transaction, so they are updated by id at once, with no
-- second lock: only those still queued. `|| ''` keeps the status test off
-- the indexes: the ids are found by primary key (on a table whose
-- statistics lag, the planner otherwise read every queued row through an
-- index on status and filtered them).
-- name: claim_tasks_by_id
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
update cairnq_tasks t set
    status = 'running',
    worker_id = :worker_id,
    lease_until_ms = clock.now_ms + :lease_ms::bigint,
    attempt = t.attempt + 1,
    updated_at_ms = clock.now_ms
from clock
where t.id = any(:ids::text[]) and (t.status || '') = 'queued'
returning t.*

-- The groups of one queue's queued rows after the cursor (:priority,
-- :after), in the order of the queued index (ext_0007, rebuilt by
-- ext_0013: priority desc, then limit key as text, the empty text for
-- none), at most :max_groups, each as [priority, key]. A skip scan: every
-- step is one seek in that index (the next key of the priority, else the
-- first key of the next priority: the second branch runs only when the
-- first finds nothing), however many rows a group holds, so a key with a
-- huge throttled backlog costs one step. Each seek is ordered as the index
-- is, so it stops at the first entry it meets, a group's newest row (still
-- queued: the claimed rows whose entries vacuum has not removed yet are at
-- the other end). Start above the top priority (2147483648, '') to begin
-- with the first group.
-- name: select_limit_groups
with recursive groups(priority, lk, n) as (
    select :priority::bigint, :after::text, 0
    union all
    select next.priority::bigint, next.lk, g.n + 1
    from groups g
    cross join lateral (
        (select priority, coalesce(metadata ->> 'limit_key', '') as lk from cairnq_tasks
         where queue = :queue and status = 'queued' and priority = g.priority
           and coalesce(metadata ->> 'limit_key', '') > g.lk
         order by coalesce(metadata ->> 'limit_key', '')
         limit 1)
        union all
        -- `>= ''`, always true, matches the index's predicate (a key that
        -- is not null); ordered by the column, not a cast of it, or the
        -- planner sorts every queued row of the lower priorities.
        (select priority, coalesce(metadata ->> 'limit_key', '') from cairnq_tasks
         where queue = :queue and status = 'queued' and priority < g.priority
           and coalesce(metadata ->> 'limit_key', '') >= ''
         order by priority desc, coalesce(metadata ->> 'limit_key', '')
         limit 1)
        limit 1
    ) next
    where g.n < :max_groups::bigint
)
select json_build_array(priority, lk)::text as id from groups where n > 0 order by n

-- One group's due rows (see select_limit_groups), oldest first, at most
-- :limit: a range of the queued index, locked, skipping rows another
-- claimer holds (so claimers of one group take different rows). For
-- executors where a statement is a call in the same process; over a
-- connection, claim_limit_groups reads and claims a priority's groups in
-- one statement.
-- name: select_limit_group_rows
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms)
select id from cairnq_tasks
where queue = :queue and status = 'queued' and priority = :priority::integer
  and coalesce(metadata ->> 'limit_key', '') = :key::text
  and run_at_ms <= (select now_ms from clock)
  and name = :name -- when: one_name
  and name = any(:names::text[]) -- when: many_names
order by run_at_ms, id
limit :limit::bigint
for update skip locked

-- Claims, in one statement, the due rows some groups (see
-- select_limit_groups) of one priority may start: the group :keys[i] (a
-- key as text, the empty text for none) offers at most :limits[i] rows,
-- oldest first, a range of the queued index each, locked, skipping rows
-- another claimer holds (so claimers of one group take different rows).
-- The groups take turns (every group's first row, then every group's
-- second, ..., in the order given) up to :need rows, claimed as
-- claim_due_tasks claims. Rows offered and not taken stay locked until
-- the transaction ends.
-- name: claim_limit_groups
with clock as (select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now_ms),
picked as materialized (
    select r.id
    from unnest(:keys::text[], :limits::bigint[]) with ordinality as g(key, n, ord)
    cross join lateral (
        select id, row_number() over (order by run_at_ms, id) as turn from (
            select id, run_at_ms from cairnq_tasks
            where queue = :queue and status = 'queued' and priority = :priority::integer
              and coalesce(metadata ->> 'limit_key', '') = g.key
              and run_at_ms <= (select now_ms from clock)
              and name = :name -- when: one_name
              and name = any(:names::text[]) -- when: many_names
            order by run_at_ms, id
            limit g.n
            for update skip locked
        ) offered
    ) r
    order by r.turn, g.ord
    limit :need::bigint
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

-- How many rows of each limit key are queued (due or not), from the queued
-- index of ext_0007.
-- name: count_queued_by_limit_key
select json_build_object('key', coalesce(metadata ->> 'limit_key', ''), 'n', count(*))::text as id
from cairnq_tasks
where status = 'queued' and coalesce(metadata ->> 'limit_key', '') <> ''
group by coalesce(metadata ->> 'limit_key', '')
