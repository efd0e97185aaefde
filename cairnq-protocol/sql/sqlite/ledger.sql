-- Opening a database: the migration ledger, the meta rows, and planner
-- statistics (PROTOCOL.md "Migrations"). Each migration is checked and
-- recorded inside the same BEGIN IMMEDIATE transaction that applies it.

-- name: create_migration_ledger
create table if not exists cairnq_migrations (name text primary key, applied_at_ms integer not null)

-- name: migration_applied
select exists (select 1 from cairnq_migrations where name = :name)

-- Every ledger entry, for tools that show what is applied and what is pending.
-- name: read_migration_ledger
select name, applied_at_ms from cairnq_migrations order by name

-- name: record_migration
insert into cairnq_migrations (name, applied_at_ms) values (:name, :now_ms)

-- The same row in a script printed for people to run (`cairnq migrate sql`):
-- the time is the database's when the script runs, and a migration already
-- recorded makes the insert fail, so its transaction applies nothing.
-- julianday (not unixepoch) runs on every SQLite that can read the schema.
-- name: record_migration_in_script
insert into cairnq_migrations (name, applied_at_ms)
values (:name, cast(round((julianday('now') - 2440587.5) * 86400000) as integer))

-- name: table_exists
select exists (select 1 from sqlite_master where type = 'table' and name = :table)

-- An index of this SDK's extensions a plan relies on (a database another
-- SDK installed may lack it).
-- name: index_exists
select exists (select 1 from sqlite_master where type = 'index' and name = :index)

-- name: read_meta
select value from cairnq_meta where key = :key

-- Every meta row (protocol_version, schema_version, ...), for tools.
-- name: read_all_meta
select key, value from cairnq_meta order by key

-- Only valid once `table_exists` confirmed sqlite_stat1: ANALYZE creates it.
-- name: tasks_analyzed
select exists (select 1 from sqlite_stat1 where tbl = 'cairnq_tasks')

-- name: analyze_tasks
analyze cairnq_tasks

-- SQLite decides itself whether any table needs fresh statistics.
-- name: optimize_planner
pragma optimize
