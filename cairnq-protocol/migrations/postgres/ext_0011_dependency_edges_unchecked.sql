-- cairnq-rs extension 11: a dependency edge's insert made cheap, measured
-- by the flow_fan_out benchmark (one handler fans out 10,000 children and
-- a join: 10,000 edges in the handler's settle).
--
-- Extension 8 gave both ends of an edge a foreign key. Postgres checks a
-- foreign key per inserted row (an index probe and a key-share lock of the
-- task row): 20,000 checks, 77 of the 113 ms of a 10,000-edge insert, the
-- join's own row locked 10,000 times. The keys checked nothing the writers
-- do not already hold: every edge is inserted in the transaction that
-- inserts its waiting task, and its dependency is either inserted by that
-- transaction too (a fan-out) or read under a share lock first (a submit
-- after known tasks: an unknown id is refused before any write).
--
-- What the keys also did, removing a task's edges when the task is purged
-- (by any SDK: other SDKs delete task rows and know nothing of this
-- table), is done by the statement trigger below instead, once per delete
-- statement, at either end of the edge. The waits row keeps its foreign
-- key (one row per waiting task).
alter table cairnq_ext_task_deps drop constraint if exists cairnq_ext_task_deps_task_id_fkey;
alter table cairnq_ext_task_deps drop constraint if exists cairnq_ext_task_deps_depends_on_id_fkey;

create or replace function cairnq_ext_forget_deleted_edges() returns trigger
language plpgsql as $body$
begin
    delete from cairnq_ext_task_deps e using deleted_rows d where e.task_id = d.id;
    delete from cairnq_ext_task_deps e using deleted_rows d where e.depends_on_id = d.id;
    return null;
end
$body$;

-- A writer may reach cairnq_tasks by a qualified name with another
-- search_path: the function resolves names in the schema it was made in.
do $pin$
begin
    execute format('alter function cairnq_ext_forget_deleted_edges() set search_path = %I', current_schema());
end;
$pin$;

drop trigger if exists cairnq_ext_task_deps_forget on cairnq_tasks;
create trigger cairnq_ext_task_deps_forget after delete on cairnq_tasks
referencing old table as deleted_rows
for each statement execute function cairnq_ext_forget_deleted_edges();
