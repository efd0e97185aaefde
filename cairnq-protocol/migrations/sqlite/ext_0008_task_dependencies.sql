-- cairnq-rs extension 8: tasks that wait for other tasks (book, "Task
-- dependencies"). A waiting task is an ordinary queued row whose run_at_ms
-- is 9999-12-31T23:59:59.999Z (253402300799999), so no SDK's worker claims
-- it; the edges below say what it waits for. The trigger at the end moves
-- it on whichever SDK settles its last dependency.
--
-- cairnq_ext_task_waits: one row per task submitted with dependencies.
-- `remaining` counts its dependencies not ended yet; `on_failure` is
-- 'cancel' (a dependency ending failed or canceled cancels it) or 'run'
-- (it runs when they have all ended, however). `not_before_ms` is the
-- run_at its own delay asked for. `doomed_by` is scratch for the trigger
-- (set and cleared within one firing).
create table if not exists cairnq_ext_task_waits (
    task_id text primary key references cairnq_tasks (id) on delete cascade,
    on_failure text not null,
    total integer not null,
    remaining integer not null,
    not_before_ms integer not null,
    doomed_by text
);
create index if not exists cairnq_ext_task_waits_doomed_idx on cairnq_ext_task_waits (doomed_by)
where doomed_by is not null;

-- cairnq_ext_task_deps: task_id waits for depends_on_id; `ordinal` is the
-- dependency's place in the submit's list; `outcome` is the status the
-- dependency ended with (null: not ended yet), written once, so a
-- dependency that is retried and ends again never counts twice.
create table if not exists cairnq_ext_task_deps (
    task_id text not null references cairnq_tasks (id) on delete cascade,
    depends_on_id text not null references cairnq_tasks (id) on delete cascade,
    ordinal integer not null,
    outcome text,
    resolved_at_ms integer,
    primary key (task_id, depends_on_id)
);
create index if not exists cairnq_ext_task_deps_on_idx on cairnq_ext_task_deps (depends_on_id, outcome);

-- When a task ends (any writer, any SDK) and some waiting task still
-- counts it, in this order:
-- 1. on failed/canceled, mark every waiting task with on_failure 'cancel'
--    that waits for it, directly or through other such tasks (SQLite does
--    not fire a trigger from its own writes, so the whole chain is found
--    here at once);
-- 2. cancel those queued rows, each with an error envelope naming its own
--    dependency that ended and how;
-- 3. and 4. resolve the edges from the ended task and the canceled ones,
--    counting each once;
-- 5. make due every waiting task with nothing left to wait for (never
--    before its own delay);
-- 6. clear the scratch marks.
-- "Now" is the ended row's completion time: SQLite's clock functions vary
-- by version, and every SDK's SQLite understands this trigger (3.40 too).
-- Only writes a protocol operation could make: a queued row made due, a
-- queued row canceled with an envelope.
create trigger if not exists cairnq_ext_task_deps_release after update of status on cairnq_tasks
when new.status in ('succeeded', 'failed', 'canceled') and old.status <> new.status
    and exists (select 1 from cairnq_ext_task_deps where depends_on_id = new.id and outcome is null)
begin
    update cairnq_ext_task_waits set doomed_by = new.id
    where new.status <> 'succeeded' and task_id in (
        select id from (
            with recursive doomed (id) as (
                select e.task_id from cairnq_ext_task_deps e
                join cairnq_ext_task_waits w on w.task_id = e.task_id
                join cairnq_tasks t on t.id = e.task_id
                where e.depends_on_id = new.id and e.outcome is null and w.on_failure = 'cancel'
                    and t.status = 'queued' and t.run_at_ms = 253402300799999
                union
                select e.task_id from doomed d
                join cairnq_ext_task_deps e on e.depends_on_id = d.id
                join cairnq_ext_task_waits w on w.task_id = e.task_id
                join cairnq_tasks t on t.id = e.task_id
                where e.outcome is null and w.on_failure = 'cancel'
                    and t.status = 'queued' and t.run_at_ms = 253402300799999
            )
            select id from doomed
        )
    );

    update cairnq_tasks set
        status = 'canceled',
        completed_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms),
        updated_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms),
        error = (
            select json_object(
                'type', 'DependencyFailed',
                'code', 'dependency_failed',
                'message', 'dependency ' || d.id || ' (' || d.name || ') ended '
                    || case when d.id = new.id then new.status else 'canceled' end,
                'retryable', json('false'),
                'details', json_object(
                    'dependency_id', d.id,
                    'dependency_name', d.name,
                    'dependency_status', case when d.id = new.id then new.status else 'canceled' end))
            from cairnq_ext_task_deps e join cairnq_tasks d on d.id = e.depends_on_id
            where e.task_id = cairnq_tasks.id and e.outcome is null
                and e.depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id)
            order by e.ordinal
            limit 1)
    where new.status <> 'succeeded' and status = 'queued' and run_at_ms = 253402300799999
        and id in (select task_id from cairnq_ext_task_waits where doomed_by = new.id);

    update cairnq_ext_task_waits set remaining = remaining - (
        select count(*) from cairnq_ext_task_deps e
        where e.task_id = cairnq_ext_task_waits.task_id and e.outcome is null
            and e.depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id))
    where task_id in (
        select e.task_id from cairnq_ext_task_deps e
        where e.outcome is null
            and e.depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id));

    update cairnq_ext_task_deps set
        outcome = case when depends_on_id = new.id then new.status else 'canceled' end,
        resolved_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where outcome is null
        and depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id);

    update cairnq_tasks set
        run_at_ms = max(coalesce(new.completed_at_ms, new.updated_at_ms),
                        (select w.not_before_ms from cairnq_ext_task_waits w where w.task_id = cairnq_tasks.id)),
        updated_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where status = 'queued' and run_at_ms = 253402300799999
        and id in (
            select w.task_id from cairnq_ext_task_waits w
            where w.remaining <= 0 and w.doomed_by is null
                and w.task_id in (
                    select e.task_id from cairnq_ext_task_deps e
                    where e.depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id)));

    update cairnq_ext_task_waits set doomed_by = null where doomed_by = new.id;
end;
