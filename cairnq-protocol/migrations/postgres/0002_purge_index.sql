-- Purge reads terminal rows by completion time.
create index if not exists cairnq_tasks_completed_idx on cairnq_tasks (completed_at_ms);
update cairnq_meta set value = '2' where key = 'schema_version' and cast(value as integer) < 2;
