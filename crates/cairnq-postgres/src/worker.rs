//! Worker-side writes: lease recovery and claims (one transaction), lease
//! extension, progress, and settling. Every write on a held task is
//! ownership-checked in its statement; matching nothing means the lease is
//! lost.

use cairnq_core::store::{
    ClaimDraw, ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ProgressParams,
    RepairParams, Repaired, SettleParams, fail_undecodable, in_asked_order, lost_lease,
};
use cairnq_core::{ErrorEnvelope, HeldLease, Json, Result, Task, TaskRef};
use cairnq_protocol::{Statement, postgres};

use crate::exec::{Exec, opt_row, rows};
use crate::json::PgJson;
use crate::read::scope;
use crate::row::{self, col};
use crate::sql::Args;
use crate::write::check_jsonb;

/// Recovers every expired lease, then runs the draws with the budget plan.
/// Must run inside one transaction. The three recovery statements and the
/// first draw are pipelined: sent together, run by the server in the order
/// sent, answered in one round trip instead of four.
pub(crate) async fn claim(exec: &impl Exec, params: &ClaimParams) -> Result<Vec<Task>> {
    let mut plan = params.plan();
    let first = params.draws.first().filter(|_| plan.limit(0) > 0).map(|draw| (draw, plan.limit(0)));
    let (none, expired) = (Args::new(), Args::new().set("error", PgJson(ErrorEnvelope::lease_expired().to_json())));
    let (_, _, _, first_rows) = futures::try_join!(
        rows(exec, &postgres::RECOVER_CANCELED_LEASES, &[], &none),
        rows(exec, &postgres::RECOVER_REQUEUED_LEASES, &[], &none),
        rows(exec, &postgres::RECOVER_FAILED_LEASES, &[], &expired),
        async {
            match first {
                Some((draw, limit)) => claim_draw(exec, params, draw, limit).await,
                None => Ok((Vec::new(), 0)),
            }
        },
    )?;
    let (mut claimed, drawn) = first_rows;
    plan.took(0, drawn);
    for (index, draw) in params.draws.iter().enumerate().skip(1) {
        let limit = plan.limit(index);
        if limit == 0 {
            continue;
        }
        let (taken, drawn) = claim_draw(exec, params, draw, limit).await?;
        plan.took(index, drawn);
        claimed.extend(taken);
    }
    Ok(claimed)
}

/// One draw. The plan counts every row drawn; a row that does not decode
/// is failed here, in the claim's transaction, and left out of the result
/// (see [`fail_undecodable`]).
async fn claim_draw(
    exec: &impl Exec,
    params: &ClaimParams,
    draw: &ClaimDraw,
    limit: u32,
) -> Result<(Vec<Task>, usize)> {
    let args = Args::new()
        .set("worker_id", params.worker_id.clone())
        .set("lease_ms", params.lease_ms)
        .set("limit", i64::from(limit));
    let (flags, args) = scope(&draw.queues, draw.names.as_deref(), args);
    let drawn: Vec<_> =
        rows(exec, &postgres::CLAIM_DUE_TASKS, &flags, &args).await?.iter().map(row::task_row).collect();
    let count = drawn.len();
    let (tasks, undecodable) = fail_undecodable(drawn);
    for (row, envelope) in undecodable {
        let Some(id) = row.task_id else { continue };
        let args = Args::new().set("id", id).set("worker_id", params.worker_id.clone()).set("error", PgJson(envelope));
        rows(exec, &postgres::FAIL_UNDECODABLE_TASK, &[], &args).await?;
    }
    Ok((tasks, count))
}

/// Rows of the given queues no ordinary operation would move (see
/// [`Store::repair`](cairnq_core::Store::repair)); one transaction.
pub(crate) async fn repair(exec: &impl Exec, params: &RepairParams) -> Result<Repaired> {
    let args = Args::new().set("queues", params.queues.clone());
    let ids = |found: Vec<tokio_postgres::Row>| found.iter().map(|r| col(r, "id")).collect::<Result<Vec<String>>>();
    let mut repaired = Repaired::default();
    repaired.expired = ids(rows(exec, &postgres::EXPIRE_UNLEASED_TASKS, &[], &args).await?)?;
    repaired.scheduled = ids(rows(exec, &postgres::SCHEDULE_UNSCHEDULED_TASKS, &[], &args).await?)?;
    Ok(repaired)
}

/// Runs an ownership-checked single-row write.
async fn owned(
    exec: &impl Exec,
    statement: &'static Statement,
    task_id: &str,
    worker_id: &str,
    args: Args,
) -> Result<Task> {
    let args = args.set("id", task_id.to_string()).set("worker_id", worker_id.to_string());
    match opt_row(exec, statement, &[], &args).await? {
        Some(found) => row::task(&found),
        None => Err(lost_lease(task_id, worker_id)),
    }
}

/// Extends one lease.
pub(crate) async fn heartbeat(exec: &impl Exec, p: &HeartbeatParams) -> Result<Task> {
    owned(exec, &postgres::HEARTBEAT_TASK, &p.task_id, &p.worker_id, Args::new().set("lease_ms", p.lease_ms)).await
}

/// Extends many leases; the held ones in the order asked.
pub(crate) async fn heartbeat_batch(exec: &impl Exec, p: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
    let args =
        Args::new().set("ids", p.task_ids.clone()).set("worker_id", p.worker_id.clone()).set("lease_ms", p.lease_ms);
    let held = rows(exec, &postgres::HEARTBEAT_TASKS, &[], &args).await?;
    let held = held.iter().map(row::held_lease).collect::<Result<Vec<_>>>()?;
    Ok(in_asked_order(p.task_ids.iter().map(String::as_str), held, |h| &h.id))
}

/// Records progress and/or message.
pub(crate) async fn progress(exec: &impl Exec, p: &ProgressParams) -> Result<Task> {
    let args = Args::new().set("progress", p.progress).set("message", p.message.clone());
    owned(exec, &postgres::UPDATE_PROGRESS, &p.task_id, &p.worker_id, args).await
}

/// Running -> succeeded, ignoring a pending cancel.
pub(crate) async fn succeed(exec: &impl Exec, p: &SettleParams) -> Result<Task> {
    settle(exec, &postgres::SUCCEED_TASK, p).await
}

/// Running -> succeeded, or canceled when a cancel is pending.
pub(crate) async fn complete(exec: &impl Exec, p: &SettleParams) -> Result<Task> {
    settle(exec, &postgres::COMPLETE_TASK, p).await
}

async fn settle(exec: &impl Exec, statement: &'static Statement, p: &SettleParams) -> Result<Task> {
    check_jsonb("result", &p.result)?;
    owned(exec, statement, &p.task_id, &p.worker_id, Args::new().set("result", PgJson(p.result.clone()))).await
}

/// Completes many tasks in one statement; the settled ones in the order asked.
pub(crate) async fn complete_batch(exec: &impl Exec, p: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
    p.completions.iter().try_for_each(|(_, result)| check_jsonb("result", result))?;
    let ids: Vec<String> = p.completions.iter().map(|(id, _)| id.clone()).collect();
    let results: std::collections::HashMap<&str, &Json> =
        p.completions.iter().map(|(id, r)| (id.as_str(), r)).collect();
    let results = Json::encode(&results)?;
    let args = Args::new().set("ids", ids).set("results", PgJson(results)).set("worker_id", p.worker_id.clone());
    let settled = rows(exec, &postgres::COMPLETE_TASKS, &[], &args).await?;
    let settled = settled.iter().map(row::task_ref).collect::<Result<Vec<_>>>()?;
    Ok(in_asked_order(p.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
}

/// Fails an attempt: cancel wins, else requeue or fail.
pub(crate) async fn fail(exec: &impl Exec, p: &FailParams) -> Result<Task> {
    check_jsonb("error", &p.error)?;
    let args =
        Args::new().set("error", PgJson(p.error.clone())).set("retryable", p.retryable).set("delay_ms", p.delay_ms);
    owned(exec, &postgres::FAIL_TASK, &p.task_id, &p.worker_id, args).await
}
