//! The worker-side operations of [`MemoryStore`](super::MemoryStore): the
//! claim probe, lease recovery, claims with their draw plan, and the
//! ownership-checked writes (heartbeats, progress, settling, failing),
//! each doing what the protocol's statement for it does.

use std::collections::HashSet;

use cairnq_core::backend::{Admission, lost_lease};
use cairnq_core::store::{
    ClaimDraw, ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ProbeParams,
    ProgressParams, RepairParams, SettleParams,
};
use cairnq_core::{ErrorEnvelope, HeldLease, Json, Repaired, Result, Task, TaskRef, TaskStatus};

use super::limits::{Limits, admitted};
use super::tables::{DueKey, Tables, Txn};

/// Whether `task` is a due queued row a draw or probe over `queues` and
/// `names` may take.
fn due_for(task: &Task, now_ms: i64, names: Option<&[String]>) -> bool {
    task.status == TaskStatus::Queued && task.run_at_ms <= now_ms && names.is_none_or(|n| n.contains(&task.name))
}

/// The queues asked, each once (a repeated queue must not draw a row twice).
fn distinct(queues: &[String]) -> Vec<&String> {
    let mut seen = HashSet::new();
    queues.iter().filter(|q| seen.insert(q.as_str())).collect()
}

/// The best due rows of `queues` with a name in `names`, in claim order,
/// at most `limit`.
fn best_due<'t>(
    tables: &'t Tables,
    now_ms: i64,
    queues: &[String],
    names: Option<&[String]>,
    limit: usize,
) -> Vec<&'t DueKey> {
    // The overall best `limit` rows are among each queue's own best `limit`.
    let mut best: Vec<&DueKey> = distinct(queues)
        .into_iter()
        .flat_map(|queue| {
            tables
                .queued_on(queue)
                .filter(|(_, _, id)| tables.task(id).is_some_and(|t| due_for(t, now_ms, names)))
                .take(limit)
        })
        .collect();
    best.sort();
    best.truncate(limit);
    best
}

/// Read-only: anything due on these queues for these names, or any
/// expired lease anywhere?
pub(super) fn claimable(tables: &Tables, now_ms: i64, params: &ProbeParams) -> bool {
    tables.expired_leases(now_ms).next().is_some()
        || !best_due(tables, now_ms, &params.queues, params.names.as_deref(), 1).is_empty()
}

/// Lease recovery, first thing in every claim: every expired lease in the
/// store, whatever the claim asks for. A pending cancel wins; attempts
/// left -> queued and due now; else failed with the lease_expired
/// envelope, the dead worker's id kept.
pub(super) fn recover_leases(txn: &mut Txn<'_>) {
    let now_ms = txn.now_ms;
    let expired: Vec<String> = txn.tables().expired_leases(now_ms).map(str::to_string).collect();
    let envelope = ErrorEnvelope::lease_expired().to_json();
    let mut queues = Vec::with_capacity(expired.len());
    for id in expired {
        txn.update(&id, |t| {
            queues.push(t.queue.clone());
            t.lease_until_ms = None;
            if t.cancel_requested_at_ms.is_some() {
                t.status = TaskStatus::Canceled;
                t.completed_at_ms = Some(now_ms);
            } else if t.attempt < t.max_attempts {
                t.status = TaskStatus::Queued;
                t.worker_id = None;
                t.progress = None;
                t.message = None;
                t.run_at_ms = now_ms;
            } else {
                t.status = TaskStatus::Failed;
                t.error = Some(envelope.clone());
                t.completed_at_ms = Some(now_ms);
            }
        });
    }
    cairnq_core::observe::leases_recovered(queues.iter().map(String::as_str));
}

/// One claim: lease recovery, then each draw within its budgets; with any
/// limit set, each draw admits only what the limits allow (see
/// [`Admission`]) and the rate state is recorded.
pub(super) fn claim(txn: &mut Txn<'_>, params: &ClaimParams, limits: &mut Limits) -> Vec<Task> {
    recover_leases(txn);
    let mut admission = limits.admission(txn.tables(), txn.now_ms);
    let mut plan = params.plan();
    let mut claimed = Vec::new();
    for (index, draw) in params.draws.iter().enumerate() {
        let taken = draw_once(txn, params, draw, plan.limit(index), admission.as_mut());
        plan.took(index, taken.len());
        claimed.extend(taken);
    }
    if let Some(admission) = &admission {
        limits.record(admission);
        cairnq_core::observe::limits_throttled(admission.throttled().iter().map(String::as_str));
    }
    claimed
}

/// Takes up to `limit` due rows for one draw (with `admission`, the best
/// rows their limits let start): running, leased to the claimer, one more
/// attempt.
fn draw_once(
    txn: &mut Txn<'_>,
    params: &ClaimParams,
    draw: &ClaimDraw,
    limit: u32,
    admission: Option<&mut Admission>,
) -> Vec<Task> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let now_ms = txn.now_ms;
    let (queues, names) = (&draw.queues, draw.names.as_deref());
    let ids: Vec<String> = match admission {
        None => best_due(txn.tables(), now_ms, queues, names, limit).into_iter().map(|(_, _, id)| id.clone()).collect(),
        Some(admission) => {
            let tables = txn.tables();
            let due = best_due(tables, now_ms, queues, names, usize::MAX)
                .into_iter()
                .filter_map(|(_, _, id)| tables.task(id));
            admitted(due.collect(), queues.len() == 1, limit, admission)
        }
    };
    let lease_until = now_ms.saturating_add(params.lease_ms);
    ids.iter()
        .filter_map(|id| {
            txn.update(id, |t| {
                t.status = TaskStatus::Running;
                t.worker_id = Some(params.worker_id.clone());
                t.lease_until_ms = Some(lease_until);
                t.attempt = t.attempt.saturating_add(1);
            })
        })
        .collect()
}

/// Whether `worker_id` holds `task`'s lease at `now_ms`.
pub(super) fn owns(task: &Task, worker_id: &str, now_ms: i64) -> bool {
    task.status == TaskStatus::Running
        && task.worker_id.as_deref() == Some(worker_id)
        && task.lease_until_ms.is_some_and(|end| end > now_ms)
}

/// An ownership-checked write: the row after it, or `LostLease`.
fn owned(txn: &mut Txn<'_>, task_id: &str, worker_id: &str, write: impl FnOnce(&mut Task)) -> Result<Task> {
    let held = txn.tables().task(task_id).is_some_and(|t| owns(t, worker_id, txn.now_ms));
    let written = if held { txn.update(task_id, write) } else { None };
    written.ok_or_else(|| lost_lease(task_id, worker_id))
}

/// Extends one lease.
pub(super) fn heartbeat(txn: &mut Txn<'_>, p: &HeartbeatParams) -> Result<Task> {
    let until = txn.now_ms.saturating_add(p.lease_ms);
    owned(txn, &p.task_id, &p.worker_id, |t| t.lease_until_ms = Some(until))
}

/// Extends every lease still held; those, in the order asked (each id once).
pub(super) fn heartbeat_batch(txn: &mut Txn<'_>, p: &HeartbeatBatchParams) -> Vec<HeldLease> {
    let until = txn.now_ms.saturating_add(p.lease_ms);
    let mut seen = HashSet::new();
    p.task_ids
        .iter()
        .filter(|id| seen.insert(id.as_str()))
        .filter_map(|id| owned(txn, id, &p.worker_id, |t| t.lease_until_ms = Some(until)).ok())
        .map(|t| HeldLease { id: t.id, cancel_requested_at_ms: t.cancel_requested_at_ms })
        .collect()
}

/// Records progress and/or message; `None` keeps the old value.
pub(super) fn progress(txn: &mut Txn<'_>, p: &ProgressParams) -> Result<Task> {
    owned(txn, &p.task_id, &p.worker_id, |t| {
        t.progress = p.progress.or(t.progress);
        t.message = p.message.clone().or(t.message.take());
    })
}

/// Running -> succeeded with progress 1.0, ignoring a pending cancel.
pub(super) fn succeed(txn: &mut Txn<'_>, p: &SettleParams) -> Result<Task> {
    let now_ms = txn.now_ms;
    owned(txn, &p.task_id, &p.worker_id, |t| {
        t.status = TaskStatus::Succeeded;
        t.result = Some(p.result.clone());
        t.progress = Some(1.0);
        t.lease_until_ms = None;
        t.completed_at_ms = Some(now_ms);
    })
}

/// Like [`succeed`], unless a cancel is pending: then canceled, result and
/// progress left as they were.
pub(super) fn complete(txn: &mut Txn<'_>, task_id: &str, worker_id: &str, result: &Json) -> Result<Task> {
    let now_ms = txn.now_ms;
    owned(txn, task_id, worker_id, |t| {
        if t.cancel_requested_at_ms.is_none() {
            t.status = TaskStatus::Succeeded;
            t.result = Some(result.clone());
            t.progress = Some(1.0);
        } else {
            t.status = TaskStatus::Canceled;
        }
        t.lease_until_ms = None;
        t.completed_at_ms = Some(now_ms);
    })
}

/// [`complete`] for each task still held; the ones settled, in the order asked.
pub(super) fn complete_batch(txn: &mut Txn<'_>, p: &CompleteBatchParams) -> Vec<TaskRef> {
    p.completions
        .iter()
        .filter_map(|(id, result)| complete(txn, id, &p.worker_id, result).ok())
        .map(|t| t.as_ref())
        .collect()
}

/// Cancel pending -> canceled; retryable with attempts left -> queued
/// after `delay_ms` (worker, progress and message cleared); else failed.
/// The error is recorded on every branch.
pub(super) fn fail(txn: &mut Txn<'_>, p: &FailParams) -> Result<Task> {
    let now_ms = txn.now_ms;
    owned(txn, &p.task_id, &p.worker_id, |t| {
        let requeue = t.cancel_requested_at_ms.is_none() && p.retryable && t.attempt < t.max_attempts;
        t.error = Some(p.error.clone());
        t.lease_until_ms = None;
        if requeue {
            t.status = TaskStatus::Queued;
            t.worker_id = None;
            t.progress = None;
            t.message = None;
            t.run_at_ms = now_ms.saturating_add(p.delay_ms);
            t.completed_at_ms = None;
        } else {
            t.status = if t.cancel_requested_at_ms.is_some() { TaskStatus::Canceled } else { TaskStatus::Failed };
            t.completed_at_ms = Some(now_ms);
        }
    })
}

/// Running rows of the queues asked that have no lease get one that ends
/// now, so the next claim's lease recovery takes them. This store's own
/// operations never leave such a row, and `run_at_ms` cannot be missing
/// here, so nothing is ever `scheduled`.
pub(super) fn repair(txn: &mut Txn<'_>, params: &RepairParams) -> Repaired {
    let ids: Vec<String> =
        txn.tables().unleased().filter(|t| params.queues.contains(&t.queue)).map(|t| t.id.clone()).collect();
    let now_ms = txn.now_ms;
    let expired = ids.into_iter().filter(|id| txn.update(id, |t| t.lease_until_ms = Some(now_ms)).is_some()).collect();
    let mut repaired = Repaired::default();
    repaired.expired = expired;
    repaired
}
