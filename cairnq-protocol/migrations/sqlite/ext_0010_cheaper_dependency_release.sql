-- cairnq-rs extension 10: the dependency release trigger of extension 8
-- made cheap again (PROTOCOL.md, Extensions: "a few indexed row writes"),
-- measured by the flow_fan_out benchmark (one handler fans out 10,000
-- children and a join).
--
-- 1. Its two updates of cairnq_tasks filtered on status = 'queued' and the
--    waiting run_at_ms beside the ids to change, and SQLite drove them from
--    the (status, completed_at_ms) index: every settle of a dependency
--    walked every queued row, so a fan-out settled in time quadratic in its
--    size. A unary + keeps those terms off any index, so both updates look
--    their few rows up by id.
-- 2. A success, the common end, takes a trigger of its own with the three
--    steps a success needs (count it, resolve its edges, make due what has
--    nothing left to wait for). Failed and canceled keep extension 8's
--    steps, in its order, in the trigger of the old name; the two never
--    fire for one write (their statuses differ), and neither fires from
--    the other's writes: a release sets no status, a cancel ends no row
--    succeeded.
-- What either writes is what extension 8 wrote.
drop trigger if exists cairnq_ext_task_deps_release;

-- A dependency succeeded: each waiting task counts it once (a task has one
-- edge per dependency), the edges are resolved, and a waiting task with
-- nothing left is made due, never before its own delay.
create trigger cairnq_ext_task_deps_succeed after update of status on cairnq_tasks
when new.status = 'succeeded' and old.status <> new.status
    and exists (select 1 from cairnq_ext_task_deps where depends_on_id = new.id and outcome is null)
begin
    update cairnq_ext_task_waits set remaining = remaining - 1
    where task_id in (select task_id from cairnq_ext_task_deps where depends_on_id = new.id and outcome is null);

    update cairnq_ext_task_deps set
        outcome = 'succeeded',
        resolved_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where depends_on_id = new.id and outcome is null;

    update cairnq_tasks set
        run_at_ms = max(coalesce(new.completed_at_ms, new.updated_at_ms),
                        (select w.not_before_ms from cairnq_ext_task_waits w where w.task_id = cairnq_tasks.id)),
        updated_at_ms = coalesce(new.completed_at_ms, new.updated_at_ms)
    where +status = 'queued' and +run_at_ms = 253402300799999
        and id in (
            select w.task_id from cairnq_ext_task_waits w
            where w.remaining <= 0 and w.doomed_by is null
                and w.task_id in (select task_id from cairnq_ext_task_deps where depends_on_id = new.id));
end;

-- A dependency failed or was canceled: extension 8's steps (see there).
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
    where +status = 'queued' and +run_at_ms = 253402300799999
        and id in (
            select w.task_id from cairnq_ext_task_waits w
            where w.remaining <= 0 and w.doomed_by is null
                and w.task_id in (
                    select e.task_id from cairnq_ext_task_deps e
                    where e.depends_on_id in (select new.id union all select task_id from cairnq_ext_task_waits where doomed_by = new.id)));

    update cairnq_ext_task_waits set doomed_by = null where doomed_by = new.id;
end;
