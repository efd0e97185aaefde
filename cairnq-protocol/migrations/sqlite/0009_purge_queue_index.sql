-- Purge filtered by queue reads only terminal rows of that queue.
create index if not exists cairnq_tasks_queue_completed_idx on cairnq_tasks (queue, completed_at_ms)
    where status in ('succeeded', 'failed', 'canceled');
update cairnq_meta set value = '9' where key = 'schema_version' and cast(value as integer) < 9;
