-- Flow control (ext_0006) without scanning throttled work: queued rows per
-- queue and priority, grouped by limit key (no key: the empty text), each
-- group in run_at order (a key is the text of `limit_key`). A limit-aware claim walks the groups (one seek
-- each, so a key holding 100,000 throttled tasks costs one seek, never a
-- walk over them) and takes each group's due rows from its start. A
-- partial index: a row is in it only while queued. Like every extension
-- index it changes no shared statement's meaning; every writer keeps it.
-- The second term (true of every row) keeps it away from the shared
-- statements: the planner uses a partial index only where it can prove
-- its WHERE, and only our statements compare the key.
create index if not exists cairnq_ext_tasks_limit_queued_idx
    on cairnq_tasks (queue, priority desc, (coalesce(metadata ->> 'limit_key', '')), run_at_ms, id)
    where status = 'queued' and coalesce(metadata ->> 'limit_key', '') is not null;
