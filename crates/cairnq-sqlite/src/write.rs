//! The write operations, each run as one job on the writer thread (inside
//! its own savepoint of a group commit).

use cairnq_core::envelope::ErrorEnvelope;
use cairnq_core::keys::{KeyedSubmit, resolve_key_conflict};
use cairnq_core::store::{
    ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, NewTask, ProgressParams,
    PurgeFilter, RepairParams, Repaired, SettleParams, SubmitRun, TaskSelector, fail_undecodable, in_asked_order,
    lost_lease, submit_runs,
};
use cairnq_core::{Error, HeldLease, Result, Task, TaskRef};
use cairnq_protocol::{Statement, sqlite};

use crate::read::{json_array, scope, selector};
use crate::row;
use crate::sql::{Args, query, query_opt, render};
use crate::writer::WriteCtx;

/// Inserts a task; with a key, resolves the conflict against the key's
/// current task first (the write transaction is the key's lock).
pub(crate) fn submit(ctx: &mut WriteCtx<'_>, task: &NewTask) -> Result<Task> {
    let Some(key) = &task.key else { return insert(ctx, task) };
    let args = Args::new().text("key", key);
    let existing = query_opt(ctx.conn, render(&sqlite::SELECT_KEY_TASK, &[])?, &args, row::task_ref)?;
    match resolve_key_conflict(task.conflict, key, existing.as_ref())? {
        KeyedSubmit::ReturnExisting => {
            let id = existing.map(|t| t.id).unwrap_or_default();
            let found = query_opt(
                ctx.conn,
                render(&sqlite::SELECT_TASK, &["by_id"])?,
                &Args::new().text("id", &id),
                row::one_task(),
            )?;
            found.ok_or(Error::NotFound { task_id: id })
        }
        KeyedSubmit::Insert { cancel_existing } => {
            if let (true, Some(old)) = (cancel_existing, &existing) {
                cancel(ctx, &TaskSelector::Id(old.id.clone()))?;
            }
            let inserted = insert(ctx, task)?;
            let args = Args::new().text("key", key).text("task_id", &inserted.id).set("now_ms", ctx.now_ms);
            query(ctx.conn, render(&sqlite::UPSERT_TASK_KEY, &[])?, &args, |_| Ok(()))?;
            Ok(inserted)
        }
    }
}

/// The most tasks one `insert_tasks` statement carries.
const INSERT_CHUNK: usize = 1_000;

/// Submits `tasks` in order: a keyed task on its own, each run of unkeyed
/// ones in `insert_tasks` statements (see [`submit_runs`]).
pub(crate) fn submit_many(ctx: &mut WriteCtx<'_>, tasks: &[NewTask]) -> Result<Vec<Task>> {
    let mut submitted = Vec::with_capacity(tasks.len());
    for run in submit_runs(tasks, INSERT_CHUNK) {
        match run {
            SubmitRun::Keyed(task) => submitted.push(submit(ctx, task)?),
            SubmitRun::Unkeyed(run) => submitted.extend(insert_unkeyed(ctx, run)?),
        }
    }
    Ok(submitted)
}

fn insert_unkeyed(ctx: &mut WriteCtx<'_>, tasks: &[NewTask]) -> Result<Vec<Task>> {
    let rows: Vec<serde_json::Value> = tasks
        .iter()
        .map(|t| {
            serde_json::json!([
                t.id,
                t.name,
                t.queue,
                t.payload.as_str(),
                t.metadata.as_str(),
                t.max_attempts,
                t.priority,
                t.delay_ms,
                t.parent_id,
                t.root_id,
                t.correlation_id
            ])
        })
        .collect();
    let args = Args::new().set("tasks", serde_json::Value::Array(rows).to_string()).set("now_ms", ctx.now_ms);
    query(ctx.conn, render(&sqlite::INSERT_TASKS, &[])?, &args, |_| Ok(()))?;
    for task in tasks {
        ctx.changes.queued_on(&task.queue);
    }
    Ok(tasks.iter().map(|t| t.inserted_row(ctx.now_ms)).collect())
}

fn insert(ctx: &mut WriteCtx<'_>, task: &NewTask) -> Result<Task> {
    let args = Args::new()
        .text("id", &task.id)
        .text("name", &task.name)
        .text("queue", &task.queue)
        .text("payload", task.payload.as_str())
        .text("metadata", task.metadata.as_str())
        .set("max_attempts", task.max_attempts)
        .set("priority", task.priority)
        .set("delay_ms", task.delay_ms)
        .opt_text("parent_id", task.parent_id.as_deref())
        .text("root_id", &task.root_id)
        .opt_text("correlation_id", task.correlation_id.as_deref())
        .set("now_ms", ctx.now_ms);
    query(ctx.conn, render(&sqlite::INSERT_TASK, &[])?, &args, |_| Ok(()))?;
    ctx.changes.queued_on(&task.queue);
    Ok(task.inserted_row(ctx.now_ms))
}

/// Runs a statement that returns at most one task row, noting the change.
fn returning_task(ctx: &mut WriteCtx<'_>, rendered: crate::sql::Rendered, args: &Args) -> Result<Option<Task>> {
    let task = query_opt(ctx.conn, rendered, args, row::one_task())?;
    if let Some(task) = &task {
        ctx.changes.saw(task);
    }
    Ok(task)
}

pub(crate) fn cancel(ctx: &mut WriteCtx<'_>, task: &TaskSelector) -> Result<Option<Task>> {
    let (flag, args) = selector(task);
    returning_task(ctx, render(&sqlite::CANCEL_TASK, &[flag])?, &args.set("now_ms", ctx.now_ms))
}

pub(crate) fn retry(ctx: &mut WriteCtx<'_>, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>> {
    let (flag, args) = selector(task);
    let flags: &[&str] = if reset_attempt { &[flag, "reset_attempt"] } else { &[flag] };
    returning_task(ctx, render(&sqlite::RETRY_TASK, flags)?, &args.set("now_ms", ctx.now_ms))
}

pub(crate) fn purge(ctx: &mut WriteCtx<'_>, params: &PurgeFilter) -> Result<Vec<String>> {
    let mut flags = vec![if params.status.is_some() { "status" } else { "any_status" }];
    flags.extend(params.queue.as_ref().map(|_| "queue"));
    flags.extend(params.name.as_ref().map(|_| "name"));
    let args = Args::new()
        .opt_text("status", params.status.map(|s| s.as_str()))
        .opt_text("queue", params.queue.as_deref())
        .opt_text("name", params.name.as_deref())
        .set("older_than_ms", params.older_than_ms)
        .set("limit", params.limit)
        .set("now_ms", ctx.now_ms);
    query(ctx.conn, render(&sqlite::PURGE_TASKS, &flags)?, &args, row::first_text)
}

/// Lease recovery, then every draw of the claim within its budgets. A drawn
/// row that does not decode is failed here, in the same transaction, and
/// left out (see [`fail_undecodable`]).
pub(crate) fn claim(ctx: &mut WriteCtx<'_>, params: &ClaimParams) -> Result<Vec<Task>> {
    recover_leases(ctx)?;
    let mut plan = params.plan();
    let mut claimed = Vec::new();
    for (index, draw) in params.draws.iter().enumerate() {
        let limit = plan.limit(index);
        if limit == 0 {
            continue;
        }
        let args = Args::new()
            .text("worker_id", &params.worker_id)
            .set("lease_ms", params.lease_ms)
            .set("limit", i64::from(limit))
            .set("now_ms", ctx.now_ms);
        let (flags, args) = scope(&draw.queues, draw.names.as_deref(), args);
        let rows = query(ctx.conn, render(&sqlite::CLAIM_DUE_TASKS, &flags)?, &args, row::task())?;
        plan.took(index, rows.len());
        let (tasks, undecodable) = fail_undecodable(rows);
        for (row, envelope) in undecodable {
            let Some(id) = row.task_id else { continue };
            let args = Args::new()
                .text("id", &id)
                .text("worker_id", &params.worker_id)
                .text("error", envelope.as_str())
                .set("now_ms", ctx.now_ms);
            query(ctx.conn, render(&sqlite::FAIL_UNDECODABLE_TASK, &[])?, &args, |_| Ok(()))?;
            ctx.changes.finished(id);
        }
        claimed.extend(tasks);
    }
    Ok(claimed)
}

/// Rows of the given queues no ordinary operation would move (see
/// [`Store::repair`](cairnq_core::Store::repair)).
pub(crate) fn repair(ctx: &mut WriteCtx<'_>, params: &RepairParams) -> Result<Repaired> {
    let args = Args::new().text("queues", &json_array(&params.queues)).set("now_ms", ctx.now_ms);
    let expired = query(ctx.conn, render(&sqlite::EXPIRE_UNLEASED_TASKS, &[])?, &args, row::first_text)?;
    let scheduled = query(ctx.conn, render(&sqlite::SCHEDULE_UNSCHEDULED_TASKS, &[])?, &args, row::first_text)?;
    for queue in params.queues.iter().filter(|_| !scheduled.is_empty()) {
        ctx.changes.queued_on(queue);
    }
    let mut repaired = Repaired::default();
    repaired.expired = expired;
    repaired.scheduled = scheduled;
    Ok(repaired)
}

/// Every expired lease in the database: cancel requested -> canceled,
/// attempts left -> queued now, else failed with the lease_expired envelope.
fn recover_leases(ctx: &mut WriteCtx<'_>) -> Result<()> {
    let envelope = ErrorEnvelope::lease_expired().to_json();
    let args = Args::new().set("now_ms", ctx.now_ms).text("error", envelope.as_str());
    let recover = |statement: &'static Statement| query(ctx.conn, render(statement, &[])?, &args, row::id_and_queue);
    let canceled = recover(&sqlite::RECOVER_CANCELED_LEASES)?;
    let requeued = recover(&sqlite::RECOVER_REQUEUED_LEASES)?;
    let failed = recover(&sqlite::RECOVER_FAILED_LEASES)?;
    for (_, queue) in &requeued {
        ctx.changes.queued_on(queue);
    }
    for (id, _) in canceled.into_iter().chain(failed) {
        ctx.changes.finished(id);
    }
    Ok(())
}

/// An ownership-checked write of one task: the row, or LostLease.
fn owned_write(
    ctx: &mut WriteCtx<'_>,
    statement: &'static Statement,
    task_id: &str,
    worker_id: &str,
    args: Args,
) -> Result<Task> {
    let args = args.text("id", task_id).text("worker_id", worker_id).set("now_ms", ctx.now_ms);
    returning_task(ctx, render(statement, &[])?, &args)?.ok_or_else(|| lost_lease(task_id, worker_id))
}

pub(crate) fn heartbeat(ctx: &mut WriteCtx<'_>, params: &HeartbeatParams) -> Result<Task> {
    let args = Args::new().set("lease_ms", params.lease_ms);
    owned_write(ctx, &sqlite::HEARTBEAT_TASK, &params.task_id, &params.worker_id, args)
}

/// The leases still held, in the order the ids were asked.
pub(crate) fn heartbeat_batch(ctx: &mut WriteCtx<'_>, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
    let args = Args::new()
        .text("ids", &json_array(&params.task_ids))
        .text("worker_id", &params.worker_id)
        .set("lease_ms", params.lease_ms)
        .set("now_ms", ctx.now_ms);
    let held = query(ctx.conn, render(&sqlite::HEARTBEAT_TASKS, &[])?, &args, row::held_lease)?;
    Ok(in_asked_order(params.task_ids.iter().map(String::as_str), held, |h| &h.id))
}

pub(crate) fn progress(ctx: &mut WriteCtx<'_>, params: &ProgressParams) -> Result<Task> {
    let args = Args::new().set("progress", params.progress).opt_text("message", params.message.as_deref());
    owned_write(ctx, &sqlite::UPDATE_PROGRESS, &params.task_id, &params.worker_id, args)
}

pub(crate) fn succeed(ctx: &mut WriteCtx<'_>, params: &SettleParams) -> Result<Task> {
    let args = Args::new().text("result", params.result.as_str());
    owned_write(ctx, &sqlite::SUCCEED_TASK, &params.task_id, &params.worker_id, args)
}

pub(crate) fn complete(ctx: &mut WriteCtx<'_>, params: &SettleParams) -> Result<Task> {
    let args = Args::new().text("result", params.result.as_str());
    owned_write(ctx, &sqlite::COMPLETE_TASK, &params.task_id, &params.worker_id, args)
}

/// The tasks settled, in the order asked; each is done for its waiters.
pub(crate) fn complete_batch(ctx: &mut WriteCtx<'_>, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
    let settles = serde_json::to_string(&params.completions).map_err(|e| Error::Serialization(e.to_string()))?;
    let args = Args::new().set("settles", settles).text("worker_id", &params.worker_id).set("now_ms", ctx.now_ms);
    let settled = query(ctx.conn, render(&sqlite::COMPLETE_TASKS, &[])?, &args, row::task_ref)?;
    for task in &settled {
        ctx.changes.finished(task.id.clone());
    }
    Ok(in_asked_order(params.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
}

pub(crate) fn fail(ctx: &mut WriteCtx<'_>, params: &FailParams) -> Result<Task> {
    let args = Args::new()
        .text("error", params.error.as_str())
        .set("retryable", i64::from(params.retryable))
        .set("delay_ms", params.delay_ms);
    owned_write(ctx, &sqlite::FAIL_TASK, &params.task_id, &params.worker_id, args)
}
