-- Extension objects are named `cairnq_ext_*` (PROTOCOL.md, Extensions), so a
-- table the SDK family may one day ship under a shared name can never be
-- silently adopted with this SDK's shape. ext_0001 (pinned: databases have
-- applied it) still creates `cairnq_schedules`; this migration renames it in
-- place, rows kept, in the same write transaction as its ledger row, so
-- processes opening the file at once see either the old or the new name.
-- SQLite cannot rename an index: the due index is recreated under its new
-- name (a handful of rows; the table rename keeps every row).
drop index if exists cairnq_schedules_due_idx;
alter table cairnq_schedules rename to cairnq_ext_schedules;
create index if not exists cairnq_ext_schedules_due_idx on cairnq_ext_schedules (next_fire_ms) where paused = 0;
