-- The migration ledger and the meta rows (PROTOCOL.md "Migrations").

-- name: create_migration_ledger
create table if not exists cairnq_migrations (name text primary key, applied_at_ms integer not null)

-- name: migration_applied
select 1 from cairnq_migrations where name = :name

-- name: record_migration
insert into cairnq_migrations (name, applied_at_ms) values (:name, :now_ms)

-- name: read_meta
select value from cairnq_meta where key = :key
