-- Connecting to a database: the migration ledger, the meta rows, and planner
-- statistics (PROTOCOL.md "Migrations"). Each migration is checked and
-- recorded inside the transaction that applies it, after that transaction
-- took `lock table cairnq_migrations in exclusive mode`. Times come from the
-- database clock: hosts do not share one.

-- name: create_migration_ledger
create table if not exists cairnq_migrations (name text primary key, applied_at_ms bigint not null)

-- name: migration_applied
select exists (select 1 from cairnq_migrations where name = :name)

-- Every ledger entry, for tools that show what is applied and what is pending.
-- name: read_migration_ledger
select name, applied_at_ms from cairnq_migrations order by name

-- name: record_migration
insert into cairnq_migrations (name, applied_at_ms)
values (:name, floor(extract(epoch from clock_timestamp()) * 1000)::bigint)

-- The same row in a script printed for people to run (`cairnq migrate sql`):
-- a migration already recorded makes the insert fail, so its transaction
-- applies nothing.
-- name: record_migration_in_script
insert into cairnq_migrations (name, applied_at_ms)
values (:name, floor(extract(epoch from clock_timestamp()) * 1000)::bigint)

-- Visible through this connection's search_path (the installation it uses).
-- name: table_exists
select to_regclass(:table::text) is not null

-- An index of this SDK's extensions a plan relies on (a database another
-- SDK installed may lack it).
-- name: index_exists
select to_regclass(:index::text) is not null

-- name: read_meta
select value from cairnq_meta where key = :key

-- Every meta row (protocol_version, schema_version, ...), for tools.
-- name: read_all_meta
select key, value from cairnq_meta order by key

-- name: tasks_analyzed
select exists (
    select 1 from pg_stat_user_tables
    where relid = to_regclass('cairnq_tasks')
      and (last_analyze is not null or last_autoanalyze is not null)
)

-- name: analyze_tasks
analyze cairnq_tasks

-- Autovacuum keeps Postgres statistics fresh after the first ANALYZE, so the
-- periodic refresh SQLite needs has nothing to do here; kept for the shared
-- statement set and answers whether autovacuum is on.
-- name: optimize_planner
select current_setting('autovacuum')::boolean
