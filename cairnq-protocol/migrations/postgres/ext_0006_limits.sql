-- cairnq-rs extension 6: flow control (README "Flow control"). A task opts
-- in by carrying a string `limit_key` in its metadata (any SDK can write
-- one); limits live here as data every process on the database shares.
-- Other SDKs ignore both tables, so their workers do not enforce limits.
--
-- cairnq_ext_limits: one row per limit. `key` is a task's limit key, or a
-- prefix ending in `*` that applies to each matching key separately. A
-- null column sets no bound of that kind.
create table if not exists cairnq_ext_limits (
    key text primary key,
    concurrency integer,
    rate_count integer,
    rate_period_ms bigint,
    burst integer,
    updated_at_ms bigint not null
);

-- The rate's only state: the theoretical arrival time (GCRA) of each
-- actual key that has started a rate-limited task. How many run is never
-- stored: a claim counts the key's running rows, so nothing can drift.
create table if not exists cairnq_ext_limit_state (
    key text primary key,
    tat_ms bigint not null
);

-- Counting a key's running rows inside the claim reads only running rows
-- (a few per worker slot), grouped by key. An extra index changes no shared
-- statement's meaning; every writer keeps it (a partial index: only rows
-- entering or leaving `running` add work).
create index if not exists cairnq_ext_tasks_limit_running_idx
    on cairnq_tasks ((metadata ->> 'limit_key')) where status = 'running';
