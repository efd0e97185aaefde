-- cairnq-rs extension 1: schedules (README "Schedules"). Not part of the
-- shared protocol: other SDKs ignore this table; a fire inserts an ordinary
-- task any SDK's worker can run.
create table if not exists cairnq_schedules (
    name text primary key,
    task_name text not null,
    queue text not null,
    payload text not null,
    priority integer not null default 0,
    max_attempts integer not null default 3,
    metadata text not null default '{}',
    spec text not null,
    tz text not null default 'UTC',
    next_fire_ms bigint not null,
    last_slot_ms bigint,
    missed integer not null default 0,
    catch_up text not null default 'latest',
    catch_up_window_ms bigint not null default 3600000,
    catch_up_max integer not null default 100,
    overlap text not null default 'allow',
    jitter_ms bigint not null default 0,
    paused boolean not null default false,
    owner text not null default 'api',
    created_at_ms bigint not null,
    updated_at_ms bigint not null
);

-- The due check reads only the unpaused rows whose next fire has come.
create index if not exists cairnq_schedules_due_idx on cairnq_schedules (next_fire_ms) where not paused;
