-- cairnq-rs extension 12 (SQLite): the task-count triggers of extension 2
-- in fewer statements. Measured (BENCHMARKS.md, the b1925ac comparison):
-- extension 2's triggers cost a tenth of a submit and of a drain, three or
-- four trigger statements per row change; those below run one or two.
--
-- Extension 2 wrote "insert if absent, then update" because of a worry
-- that the firing statement's conflict clause (`insert or fail`, `update
-- or ignore`, ...) would override the trigger's own. It overrides an
-- `or ...` clause, not an upsert: an upsert resolves its uniqueness
-- conflict itself, whatever clause the outer statement carries (checked
-- with every outer clause). An upsert needs SQLite 3.24; the shared
-- statements already need 3.38 (`->>`), so no SDK that can use the file
-- is left out. The counts and the delete trigger do not change.
drop trigger if exists cairnq_ext_task_counts_insert;
create trigger cairnq_ext_task_counts_insert after insert on cairnq_tasks
begin
    insert into cairnq_ext_task_counts (queue, status, n) values (new.queue, new.status, 1)
    on conflict (queue, status) do update set n = n + 1;
end;

drop trigger if exists cairnq_ext_task_counts_update;
create trigger cairnq_ext_task_counts_update after update of queue, status on cairnq_tasks
when old.queue is not new.queue or old.status is not new.status
begin
    update cairnq_ext_task_counts set n = n - 1 where queue = old.queue and status = old.status;
    insert into cairnq_ext_task_counts (queue, status, n) values (new.queue, new.status, 1)
    on conflict (queue, status) do update set n = n + 1;
end;
