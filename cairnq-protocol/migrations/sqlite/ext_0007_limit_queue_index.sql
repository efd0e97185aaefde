-- Flow control (ext_0006) without scanning throttled work: queued rows per
-- queue and priority, grouped by limit key (no key: the empty text), each
-- group in run_at order (a key is the text of `limit_key`). A limit-aware claim walks the groups (one seek
-- each, so a key holding 100,000 throttled tasks costs one seek, never a
-- walk over them) and takes each group's due rows from its start. A
-- partial index: a row is in it only while queued. Like every extension
-- index it changes no shared statement's meaning; every writer keeps it.
-- `priority is not null` (true of every row) keeps it away from the shared
-- statements: SQLite uses a partial index only for a query that meets
-- every term of its WHERE, and only ours compare the priority (which meets
-- this one); else the planner would skip-scan it for a claim over several
-- queues, and sort.
create index if not exists cairnq_ext_tasks_limit_queued_idx
    on cairnq_tasks (queue, priority desc, coalesce(cast(json_extract(metadata, '$.limit_key') as text), ''), run_at_ms, id)
    where status = 'queued' and priority is not null;

-- A key's running rows, counted for the keys a claim meets (a range each,
-- whatever else runs). Kept off the shared statements the same way: one
-- such partial index on running rows, usable by them, led SQLite (without
-- planner statistics) to read lease recovery's rows through another index.
create index if not exists cairnq_ext_tasks_running_key_idx
    on cairnq_tasks (coalesce(cast(json_extract(metadata, '$.limit_key') as text), ''))
    where status = 'running' and priority is not null;
