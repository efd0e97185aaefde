-- Purge filtered by a terminal status reads this index in order.
create index if not exists cairnq_tasks_status_completed_idx on cairnq_tasks (status, completed_at_ms);
update cairnq_meta set value = '7' where key = 'schema_version' and cast(value as integer) < 7;
