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
    not_before_ms bigint not null,
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
    resolved_at_ms bigint,
    primary key (task_id, depends_on_id)
);
create index if not exists cairnq_ext_task_deps_on_idx on cairnq_ext_task_deps (depends_on_id, outcome);

-- After every UPDATE statement on cairnq_tasks (any writer, any SDK): for
-- each row that ended in it and that some waiting task still counts, in id
-- order, the steps of the SQLite trigger of this migration (mark the
-- cancel-policy waiters of a failure, directly or through each other;
-- cancel them with an envelope naming their own dependency; resolve the
-- edges once; make due what has nothing left to wait for, never before its
-- own delay; clear the marks), plus a `cairnq_queued` notification for the
-- queues that gained due work, as the shared notify trigger sends.
--
-- Two dependencies of one task may end in two transactions at once: under
-- read committed neither would see the other's edge resolved, and the
-- task would wait forever. So every waits row the statement may touch is
-- locked first, all at once and sorted by task id (the second transaction
-- waits, then reads the first one's committed count; sorted, two batch
-- settles never deadlock on each other). A statement whose rows count for
-- no waiting task stops at the first query.
create or replace function cairnq_ext_release_dependents() returns trigger
language plpgsql as $body$
declare
    waiting constant bigint := 253402300799999;
    ended record;
    queues text[];
begin
    if not exists (
        select 1 from new_rows n join old_rows o on o.id = n.id
        where n.status in ('succeeded', 'failed', 'canceled') and o.status <> n.status
            and exists (select 1 from cairnq_ext_task_deps e where e.depends_on_id = n.id and e.outcome is null)
    ) then
        return null;
    end if;

    perform 1 from cairnq_ext_task_waits w
    where w.task_id in (
        with recursive reach (id, deep) as (
            select e.task_id, n.status <> 'succeeded'
            from new_rows n join old_rows o on o.id = n.id
            join cairnq_ext_task_deps e on e.depends_on_id = n.id and e.outcome is null
            where n.status in ('succeeded', 'failed', 'canceled') and o.status <> n.status
            union
            select e.task_id, true from reach r
            join cairnq_ext_task_deps e on e.depends_on_id = r.id and e.outcome is null
            where r.deep
        )
        select id from reach
    )
    order by w.task_id
    for update;

    for ended in
        select n.id, n.status, coalesce(n.completed_at_ms, n.updated_at_ms) as at
        from new_rows n join old_rows o on o.id = n.id
        where n.status in ('succeeded', 'failed', 'canceled') and o.status <> n.status
            and exists (select 1 from cairnq_ext_task_deps e where e.depends_on_id = n.id and e.outcome is null)
        order by n.id
    loop
        if ended.status <> 'succeeded' then
            update cairnq_ext_task_waits set doomed_by = ended.id
            where task_id in (
                with recursive doomed (id) as (
                    select e.task_id from cairnq_ext_task_deps e
                    join cairnq_ext_task_waits w on w.task_id = e.task_id
                    join cairnq_tasks t on t.id = e.task_id
                    where e.depends_on_id = ended.id and e.outcome is null and w.on_failure = 'cancel'
                        and t.status = 'queued' and t.run_at_ms = waiting
                    union
                    select e.task_id from doomed d
                    join cairnq_ext_task_deps e on e.depends_on_id = d.id
                    join cairnq_ext_task_waits w on w.task_id = e.task_id
                    join cairnq_tasks t on t.id = e.task_id
                    where e.outcome is null and w.on_failure = 'cancel'
                        and t.status = 'queued' and t.run_at_ms = waiting
                )
                select id from doomed
            );

            update cairnq_tasks t set
                status = 'canceled',
                completed_at_ms = ended.at,
                updated_at_ms = ended.at,
                error = (
                    select jsonb_build_object(
                        'type', 'DependencyFailed',
                        'code', 'dependency_failed',
                        'message', 'dependency ' || d.id || ' (' || d.name || ') ended '
                            || case when d.id = ended.id then ended.status else 'canceled' end,
                        'retryable', false,
                        'details', jsonb_build_object(
                            'dependency_id', d.id,
                            'dependency_name', d.name,
                            'dependency_status', case when d.id = ended.id then ended.status else 'canceled' end))
                    from cairnq_ext_task_deps e join cairnq_tasks d on d.id = e.depends_on_id
                    where e.task_id = t.id and e.outcome is null
                        and (e.depends_on_id = ended.id or e.depends_on_id in (
                            select task_id from cairnq_ext_task_waits where doomed_by = ended.id))
                    order by e.ordinal
                    limit 1)
            where t.status = 'queued' and t.run_at_ms = waiting
                and t.id in (select task_id from cairnq_ext_task_waits where doomed_by = ended.id);
        end if;

        with settled as (
            select ended.id as id
            union all
            select task_id from cairnq_ext_task_waits where doomed_by = ended.id
        ),
        resolved as (
            update cairnq_ext_task_deps e set
                outcome = case when e.depends_on_id = ended.id then ended.status else 'canceled' end,
                resolved_at_ms = ended.at
            from settled s
            where e.depends_on_id = s.id and e.outcome is null
            returning e.task_id
        ),
        counted as (
            select task_id, count(*) as n from resolved group by task_id
        ),
        left_to_wait as (
            update cairnq_ext_task_waits w set remaining = w.remaining - c.n
            from counted c
            where w.task_id = c.task_id
            returning w.task_id, w.remaining, w.doomed_by, w.not_before_ms
        ),
        released as (
            update cairnq_tasks t set
                run_at_ms = greatest(ended.at, l.not_before_ms),
                updated_at_ms = ended.at
            from left_to_wait l
            where t.id = l.task_id and l.remaining <= 0 and l.doomed_by is null
                and t.status = 'queued' and t.run_at_ms = waiting
            returning t.queue
        )
        select array_agg(distinct queue) into queues from released;

        perform pg_notify('cairnq_queued', q) from unnest(queues) as q;

        update cairnq_ext_task_waits set doomed_by = null where doomed_by = ended.id;
    end loop;
    return null;
end;
$body$;

-- A writer may reach cairnq_tasks by a qualified name with another
-- search_path: the function resolves names in the schema it was made in.
do $pin$
begin
    execute format('alter function cairnq_ext_release_dependents() set search_path = %I', current_schema());
end;
$pin$;

drop trigger if exists cairnq_ext_task_deps_release on cairnq_tasks;
create trigger cairnq_ext_task_deps_release after update on cairnq_tasks
    referencing old table as old_rows new table as new_rows
    for each statement execute function cairnq_ext_release_dependents();
