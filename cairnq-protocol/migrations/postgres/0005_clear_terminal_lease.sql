-- Only running rows hold a lease; older writers left it on settled rows.
update cairnq_tasks set lease_until_ms = null where status <> 'running' and lease_until_ms is not null;
update cairnq_meta set value = '5' where key = 'schema_version' and cast(value as integer) < 5;
