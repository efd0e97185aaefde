-- cairnq-rs extension 10: the dependency release of extension 8 made
-- cheap again (PROTOCOL.md, Extensions: "a few indexed row writes"),
-- measured by the flow_fan_out benchmark (one handler fans out 10,000
-- children and a join). Extension 8's one trigger ran six statements for
-- every settled dependency, and two of them, updates of cairnq_tasks that
-- filtered on status = 'queued' beside the ids to change, were driven by
-- the (status, completed_at_ms) index: every settle walked every queued
-- row, so a fan-out settled in time quadratic in its size. Now the work
-- is split by what each write changes, each trigger doing a few lookups
-- by key (the edges of a success are resolved in one statement; each
-- resolved edge counts itself):
--
-- 1. A task ends succeeded: its unresolved edges are resolved.
-- 2. A task ends failed or canceled: extension 8's steps for the waiting
--    tasks to cancel (marked, directly or through each other; canceled
--    with an envelope naming their own dependency), then its edges and
--    theirs are resolved, then the marks cleared. The unary + keeps the
--    cancel's terms off the status index.
-- 3. An edge is resolved (by 1 or 2): its waiting task counts it once and,
--    with nothing left and not being canceled, is made due at the edge's
--    resolution (the ending that released it), never before its own delay.
--
-- What is written is what extension 8 wrote, in the same transaction.
-- SQLite fires a trigger from another trigger's writes (only a trigger's
-- own writes never fire it again), on every SDK's SQLite.
drop trigger if exists cairnq_ext_task_deps_release;

-- 1.
create trigger cairnq_ext_task_deps_succeed after update of status on cairnq_tasks
when new.status = 'succeeded' and old.status <> new.status
    and exists (select 1 from cairnq_ext_task_deps where depends_on_id = new.id and outcome is null)
begin
    update cairnq_ext_task_deps set
        outcome = 'succeeded',
        resolved_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where depends_on_id = new.id and outcome is null;
end;

-- 2.
create trigger cairnq_ext_task_deps_release after update of status on cairnq_tasks
when new.status in ('failed', 'canceled') and old.status <> new.status
    and exists (select 1 from cairnq_ext_task_deps where depends_on_id = new.id and outcome is null)
begin
    update cairnq_ext_task_waits set doomed_by = new.id
    where task_id in (
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
    where +status = 'queued' and +run_at_ms = 253402300799999
        and id in (select task_id from cairnq_ext_task_waits where doomed_by = new.id);

    update cairnq_ext_task_deps set
        outcome = case when depends_on_id = new.id then new.status else 'canceled' end,
        resolved_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where outcome is null
        and depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id);

    update cairnq_ext_task_waits set doomed_by = null where doomed_by = new.id;
end;

-- 3.
create trigger cairnq_ext_task_deps_count after update of outcome on cairnq_ext_task_deps
when old.outcome is null and new.outcome is not null
begin
    update cairnq_ext_task_waits set remaining = remaining - 1 where task_id = new.task_id;

    update cairnq_tasks set
        run_at_ms = max(new.resolved_at_ms,
                        (select w.not_before_ms from cairnq_ext_task_waits w where w.task_id = new.task_id)),
        updated_at_ms = new.resolved_at_ms
    where id = new.task_id and +status = 'queued' and +run_at_ms = 253402300799999
        and exists (select 1 from cairnq_ext_task_waits w
                    where w.task_id = new.task_id and w.remaining <= 0 and w.doomed_by is null);
end;
