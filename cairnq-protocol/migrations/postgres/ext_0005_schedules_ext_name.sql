-- Extension objects are named `cairnq_ext_*` (PROTOCOL.md, Extensions), so a
-- table the SDK family may one day ship under a shared name can never be
-- silently adopted with this SDK's shape. ext_0001 (pinned: databases have
-- applied it) still creates `cairnq_schedules`; this migration renames the
-- table and its due index in place, rows kept, in the same transaction as
-- its ledger row and under the installation lock, so processes starting at
-- once see either the old or the new name, never neither.
alter table cairnq_schedules rename to cairnq_ext_schedules;
alter index cairnq_schedules_due_idx rename to cairnq_ext_schedules_due_idx;
-- The primary key's index (and with it the constraint) keeps the name it was
-- created with unless renamed too.
alter index cairnq_schedules_pkey rename to cairnq_ext_schedules_pkey;
