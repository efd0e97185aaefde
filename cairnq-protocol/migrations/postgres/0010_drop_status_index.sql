-- The status-only index is covered by the status/completed index.
drop index if exists cairnq_tasks_status_idx;
update cairnq_meta set value = '10' where key = 'schema_version' and cast(value as integer) < 10;
