//! The write operations, each run as one job on the writer thread (inside
//! its own savepoint of a group commit): the flows written once in
//! `cairnq_core::backend::flows`, run on this connection, and the one
//! write whose statement is SQLite's own shape (`complete_batch`).

use cairnq_core::backend::{Query, Sql, flows, in_asked_order};
use cairnq_core::store::{
    ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, NewTask, ProgressParams,
    PurgeFilter, RepairParams, Repaired, SettleParams, TaskSelector,
};
use cairnq_core::{Error, HeldLease, Result, Task, TaskRef};

use crate::exec::SqliteExec;
use crate::row;
use crate::sql::query;
use crate::writer::WriteCtx;

pub(crate) fn submit(ctx: &mut WriteCtx<'_>, task: &NewTask) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::submit(&exec, task))
}

pub(crate) fn submit_many(ctx: &mut WriteCtx<'_>, tasks: &[NewTask]) -> Result<Vec<Task>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::submit_many(&exec, tasks))
}

pub(crate) fn cancel(ctx: &mut WriteCtx<'_>, task: &TaskSelector) -> Result<Option<Task>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::cancel(&exec, task))
}

pub(crate) fn retry(ctx: &mut WriteCtx<'_>, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::retry(&exec, task, reset_attempt))
}

pub(crate) fn purge(ctx: &mut WriteCtx<'_>, params: &PurgeFilter) -> Result<Vec<String>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::purge(&exec, params))
}

pub(crate) fn claim(ctx: &mut WriteCtx<'_>, params: &ClaimParams) -> Result<Vec<Task>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::claim(&exec, params))
}

pub(crate) fn repair(ctx: &mut WriteCtx<'_>, params: &RepairParams) -> Result<Repaired> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::repair(&exec, params))
}

pub(crate) fn heartbeat(ctx: &mut WriteCtx<'_>, params: &HeartbeatParams) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::heartbeat(&exec, params))
}

pub(crate) fn heartbeat_batch(ctx: &mut WriteCtx<'_>, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::heartbeat_batch(&exec, params))
}

pub(crate) fn progress(ctx: &mut WriteCtx<'_>, params: &ProgressParams) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::progress(&exec, params))
}

pub(crate) fn succeed(ctx: &mut WriteCtx<'_>, params: &SettleParams) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::succeed(&exec, params))
}

pub(crate) fn complete(ctx: &mut WriteCtx<'_>, params: &SettleParams) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::complete(&exec, params))
}

pub(crate) fn fail(ctx: &mut WriteCtx<'_>, params: &FailParams) -> Result<Task> {
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::fail(&exec, params))
}

/// The tasks settled, in the order asked; each is done for its waiters.
/// `:settles` is one JSON array of `[id, result]` pairs (results embedded
/// verbatim), the shape SQLite's `json_each` reads.
pub(crate) fn complete_batch(ctx: &mut WriteCtx<'_>, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
    let settles = serde_json::to_string(&params.completions).map_err(|e| Error::Serialization(e.to_string()))?;
    let q = Query::new(Sql::CompleteTasks)
        .arg("settles", settles)
        .arg("worker_id", &params.worker_id)
        .arg("now_ms", ctx.now_ms);
    let settled = query(ctx.conn, &q, row::task_ref)?;
    for task in &settled {
        ctx.changes.finished(task.id.clone());
    }
    Ok(in_asked_order(params.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
}
