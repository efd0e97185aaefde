-- Exact task counts per (queue, status), kept by triggers in the same
-- transaction as the row change, so stats() and queue_depth read a handful
-- of rows instead of counting the whole table. Triggers fire for every
-- writer of cairnq_tasks, this SDK or another, so the counts stay exact when
-- other SDKs share the file; they add rows to no shared table and change no
-- shared statement's meaning. Written as insert-if-absent + `update` (no
-- upsert, so any SQLite that can read the schema can run them; no `or
-- ignore`, which the firing statement's own conflict clause would override).
create table if not exists cairnq_ext_task_counts (
    queue text not null,
    status text not null,
    n integer not null,
    primary key (queue, status)
);

-- Backfill an existing database once: this runs in the migration's write
-- transaction, so no row can change between the count and the triggers.
insert into cairnq_ext_task_counts (queue, status, n)
select queue, status, count(*) from cairnq_tasks
where not exists (select 1 from cairnq_ext_task_counts)
group by queue, status;

create trigger if not exists cairnq_ext_task_counts_insert after insert on cairnq_tasks
begin
    insert into cairnq_ext_task_counts (queue, status, n)
    select new.queue, new.status, 0
    where not exists (select 1 from cairnq_ext_task_counts where queue = new.queue and status = new.status);
    update cairnq_ext_task_counts set n = n + 1 where queue = new.queue and status = new.status;
end;

create trigger if not exists cairnq_ext_task_counts_delete after delete on cairnq_tasks
begin
    update cairnq_ext_task_counts set n = n - 1 where queue = old.queue and status = old.status;
end;

create trigger if not exists cairnq_ext_task_counts_update after update of queue, status on cairnq_tasks
when old.queue is not new.queue or old.status is not new.status
begin
    update cairnq_ext_task_counts set n = n - 1 where queue = old.queue and status = old.status;
    insert into cairnq_ext_task_counts (queue, status, n)
    select new.queue, new.status, 0
    where not exists (select 1 from cairnq_ext_task_counts where queue = new.queue and status = new.status);
    update cairnq_ext_task_counts set n = n + 1 where queue = new.queue and status = new.status;
end;
