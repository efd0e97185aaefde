-- Exact task counts per (queue, status), kept by triggers in the same
-- transaction as the row change, so stats() and queue_depth read a handful
-- of rows instead of counting the whole table. Triggers fire for every
-- writer of cairnq_tasks, this SDK or another, so the counts stay exact when
-- other SDKs share the database; they change no shared statement's meaning.
--
-- Concurrent writers must not queue up on one hot counter row (nor deadlock
-- taking two of them in opposite orders), so a statement only INSERTS its
-- net change (one row per (queue, status) it moved), and a count is the sum
-- of its rows. Now and then a writer folds the rows into one per
-- (queue, status): under one advisory lock at a time, skipped when busy, and
-- only at read committed, where deleting a row another fold already deleted
-- is a no-op rather than a serialization failure. Rows inserted by
-- transactions the fold cannot see are left alone, so sums stay exact.
create table if not exists cairnq_ext_task_counts (
    queue text not null,
    status text not null,
    n bigint not null
);
create index if not exists cairnq_ext_task_counts_idx on cairnq_ext_task_counts (queue, status);

-- Folds the delta rows; called by the triggers below about once every 64
-- statements (a read may call it too).
create or replace function cairnq_ext_fold_task_counts() returns void
language plpgsql as $body$
begin
    if current_setting('transaction_isolation') = 'read committed'
        and pg_try_advisory_xact_lock(hashtextextended('cairnq_ext_task_counts', 0)) then
        with gone as (delete from cairnq_ext_task_counts returning queue, status, n)
        insert into cairnq_ext_task_counts (queue, status, n)
        select queue, status, sum(n) from gone group by queue, status having sum(n) <> 0;
    end if;
end;
$body$;

create or replace function cairnq_ext_count_tasks() returns trigger
language plpgsql as $body$
begin
    if tg_op = 'INSERT' then
        insert into cairnq_ext_task_counts (queue, status, n)
        select queue, status, count(*) from new_rows group by queue, status;
    elsif tg_op = 'DELETE' then
        insert into cairnq_ext_task_counts (queue, status, n)
        select queue, status, -count(*) from old_rows group by queue, status;
    else
        insert into cairnq_ext_task_counts (queue, status, n)
        select queue, status, sum(d) from (
            select queue, status, 1 as d from new_rows
            union all
            select queue, status, -1 as d from old_rows
        ) as moved
        group by queue, status having sum(d) <> 0;
    end if;
    if random() < 1.0 / 64 then
        perform cairnq_ext_fold_task_counts();
    end if;
    return null;
end;
$body$;

-- A writer may reach cairnq_tasks by a qualified name with another
-- search_path: the functions resolve names in the schema they were made in.
do $pin$
begin
    execute format('alter function cairnq_ext_fold_task_counts() set search_path = %I', current_schema());
    execute format('alter function cairnq_ext_count_tasks() set search_path = %I', current_schema());
end;
$pin$;

-- Triggers and backfill under a lock that lets readers in but no writer, so
-- no row changes between the count and the triggers taking over.
lock table cairnq_tasks in share row exclusive mode;

drop trigger if exists cairnq_ext_task_counts_insert on cairnq_tasks;
create trigger cairnq_ext_task_counts_insert after insert on cairnq_tasks
    referencing new table as new_rows
    for each statement execute function cairnq_ext_count_tasks();
drop trigger if exists cairnq_ext_task_counts_update on cairnq_tasks;
create trigger cairnq_ext_task_counts_update after update on cairnq_tasks
    referencing old table as old_rows new table as new_rows
    for each statement execute function cairnq_ext_count_tasks();
drop trigger if exists cairnq_ext_task_counts_delete on cairnq_tasks;
create trigger cairnq_ext_task_counts_delete after delete on cairnq_tasks
    referencing old table as old_rows
    for each statement execute function cairnq_ext_count_tasks();

insert into cairnq_ext_task_counts (queue, status, n)
select queue, status, count(*) from cairnq_tasks
where not exists (select 1 from cairnq_ext_task_counts)
group by queue, status;
