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
    rate_period_ms integer,
    burst integer,
    updated_at_ms integer not null
);

-- The rate's only state: the theoretical arrival time (GCRA) of each
-- actual key that has started a rate-limited task. How many run is never
-- stored: a claim counts the key's running rows, so nothing can drift.
create table if not exists cairnq_ext_limit_state (
    key text primary key,
    tat_ms integer not null
);

-- A key's running rows are counted from the running rows alone (a few per
-- worker slot, found through the status index); no index of our own is
-- added for them: without planner statistics, one partial on `running`
-- led SQLite to read lease recovery's rows through another index.
