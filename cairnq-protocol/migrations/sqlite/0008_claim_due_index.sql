-- Claims order by due time, then id: rebuild both claim indexes to match.
drop index if exists cairnq_tasks_claim_idx;
drop index if exists cairnq_tasks_claim_name_idx;
create index if not exists cairnq_tasks_claim_idx on cairnq_tasks (queue, status, priority desc, run_at_ms, id);
create index if not exists cairnq_tasks_claim_name_idx on cairnq_tasks (queue, status, name, priority desc, run_at_ms, id);
update cairnq_meta set value = '8' where key = 'schema_version' and cast(value as integer) < 8;
