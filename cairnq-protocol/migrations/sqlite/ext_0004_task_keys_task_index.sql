-- Deleting a task (purge, retention) cascades to cairnq_task_keys through
-- its `on delete cascade` foreign key, and the shared schema has no index
-- on cairnq_task_keys.task_id: every deleted task then scans the whole key
-- table, so purging slows as keys accumulate. This index makes that lookup
-- one probe. An extra index on a shared table changes no column, row or
-- statement meaning; another SDK's writes simply keep it too.
create index if not exists cairnq_ext_task_keys_task_idx on cairnq_task_keys (task_id);
