-- cairnq-rs extension 10: the dependency release of extension 8 made
-- cheap for the common end, a success (PROTOCOL.md, Extensions: "a few
-- indexed row writes"), measured by the flow_fan_out benchmark (one
-- handler fans out 10,000 children and a join).
--
-- Extension 8's function ran its steps once per ended row, a handful of
-- statements each; a settle of 64 children ran some 250. Now the failed and
-- canceled rows of the statement run those steps as before, one by one in
-- id order, and then every succeeded row is resolved at once: its edges,
-- each waiting task's count (less the edges resolved for it), and the
-- release of what has nothing left to wait for (never before its own
-- delay; at the latest ending among the statement's rows it waited for),
-- with the same notification. The order does not change the outcome: a
-- success never cancels, a failure's cancel is final, and a release needs
-- every edge resolved, whichever was resolved first. The lock of the waits
-- rows, taken before either, is unchanged.
create or replace function cairnq_ext_release_dependents() returns trigger
language plpgsql as $body$
declare
    waiting constant bigint := 253402300799999;
    ended record;
    queues text[];
begin
    -- Most statements (every claim, every settle outside a flow) end no
    -- task that anything waits for: say so from new_rows alone. Every
    -- step below reads new_rows alone too: a row that was already terminal
    -- has no unresolved edge (its edges were resolved when it ended, or
    -- at their insert when it had ended before), so "terminal now, with an
    -- unresolved edge" names exactly the rows this statement ended.
    -- Joining old_rows to tell them apart compared every pair of the two
    -- transition tables (they have no index, and the planner guesses one
    -- row each: a nested loop), which cost a 512-row settle of a fan-out's
    -- children 100 ms, more than the settle itself.
    if not exists (
        select 1 from new_rows n
        where n.status in ('succeeded', 'failed', 'canceled')
            and exists (select 1 from cairnq_ext_task_deps e where e.depends_on_id = n.id and e.outcome is null)
    ) then
        return null;
    end if;

    perform 1 from cairnq_ext_task_waits w
    where w.task_id in (
        with recursive reach (id, deep) as (
            select e.task_id, n.status <> 'succeeded'
            from new_rows n
            join cairnq_ext_task_deps e on e.depends_on_id = n.id and e.outcome is null
            where n.status in ('succeeded', 'failed', 'canceled')
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
        from new_rows n
        where n.status in ('failed', 'canceled')
            and exists (select 1 from cairnq_ext_task_deps e where e.depends_on_id = n.id and e.outcome is null)
        order by n.id
    loop
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

    with settled as (
        select n.id, coalesce(n.completed_at_ms, n.updated_at_ms) as at
        from new_rows n
        where n.status = 'succeeded'
    ),
    resolved as (
        update cairnq_ext_task_deps e set outcome = 'succeeded', resolved_at_ms = s.at
        from settled s
        where e.depends_on_id = s.id and e.outcome is null
        returning e.task_id, s.at
    ),
    counted as (
        select task_id, count(*) as n, max(at) as at from resolved group by task_id
    ),
    left_to_wait as (
        update cairnq_ext_task_waits w set remaining = w.remaining - c.n
        from counted c
        where w.task_id = c.task_id
        returning w.task_id, w.remaining, w.doomed_by, w.not_before_ms, c.at
    ),
    released as (
        update cairnq_tasks t set
            run_at_ms = greatest(l.at, l.not_before_ms),
            updated_at_ms = l.at
        from left_to_wait l
        where t.id = l.task_id and l.remaining <= 0 and l.doomed_by is null
            and t.status = 'queued' and t.run_at_ms = waiting
        returning t.queue
    )
    select array_agg(distinct queue) into queues from released;

    perform pg_notify('cairnq_queued', q) from unnest(queues) as q;
    return null;
end;
$body$;

-- A writer may reach cairnq_tasks by a qualified name with another
-- search_path: the function resolves names in the schema it was made in
-- (a replaced function keeps none of its old settings).
do $pin$
begin
    execute format('alter function cairnq_ext_release_dependents() set search_path = %I', current_schema());
end;
$pin$;

