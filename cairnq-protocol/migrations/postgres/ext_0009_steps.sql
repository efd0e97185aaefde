-- cairnq-rs extension 9: durable steps (book: "Durable steps"). A handler's
-- `ctx.step(name, ...)` stores what the step returned here before the step
-- returns, so a later attempt of the same task reads it back instead of
-- running the step again. Only ownership-checked writes add rows (the
-- attempt must still hold the task's lease); other SDKs never read them.
--
-- A task's steps go with the task: the foreign key cascades on the purge of
-- any SDK, as the shared cairnq_task_keys' does. The cascade only deletes
-- rows of this table, so it can never fail the delete that fires it. The
-- primary key (`cairnq_ext_steps_pkey`) is also the index the cascade reads.
--
-- `result` holds the step's value (JSON `null` for a step that returned
-- nothing); `error` the error envelope of a permanent failure, with
-- `result` then SQL NULL. `attempt` is the attempt that stored it.
create table if not exists cairnq_ext_steps (
    task_id text not null references cairnq_tasks (id) on delete cascade,
    name text not null,
    attempt integer not null,
    result jsonb,
    error jsonb,
    created_at_ms bigint not null,
    primary key (task_id, name)
);
