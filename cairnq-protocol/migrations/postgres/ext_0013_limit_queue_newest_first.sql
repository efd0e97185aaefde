-- cairnq-rs extension 13 (Postgres only): the queued index of extension 7
-- rebuilt with each group's rows newest first, measured by the
-- burn_down_limited benchmark (BENCHMARKS.md, 2026-12-06).
--
-- A limit-aware claim walks that index group by group, one seek a step
-- (select_limit_groups), and takes each group's oldest due rows. A claimed
-- row leaves the index only when vacuum comes: until then its entry stays
-- where it was, at the old end of its group, and a scan landing there
-- visits the row to find it no longer queued. With the oldest rows first,
-- the walk's seeks landed on those entries (1.2-1.4 ms of walking a claim
-- in that benchmark). With the newest first, a seek lands on the newest
-- row of a group, which is queued (0.3 ms); reading a group's oldest rows
-- becomes a backward scan of the same range, passing those entries as the
-- forward scan did.
--
-- Same name (a claim enforces limits where the index exists), columns and
-- predicate; only the order within a group changes. SQLite removes an
-- entry with its row and keeps extension 7's order. Like every extension
-- index it changes no shared statement's meaning; every writer keeps it.
-- The rebuild holds writes to cairnq_tasks for one scan of the table.
drop index if exists cairnq_ext_tasks_limit_queued_idx;
create index cairnq_ext_tasks_limit_queued_idx
    on cairnq_tasks (queue, priority desc, (coalesce(metadata ->> 'limit_key', '')), run_at_ms desc, id desc)
    where status = 'queued' and coalesce(metadata ->> 'limit_key', '') is not null;
