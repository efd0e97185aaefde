//! The operations whose logic is the same in every dialect, written once
//! over an [`Executor`]: keyed submits, claims, the lease-checked writes,
//! cancel, retry, purge and repair.
//!
//! A backend implements [`Executor`] for whatever runs statements inside
//! the transaction it opened (SQLite's writer connection, a Postgres
//! transaction) and calls these. The flows are `async` so a Postgres
//! executor can pipeline statements sent together (claim sends lease
//! recovery and the first draw in one round trip); a synchronous executor
//! returns ready futures and runs them with a trivial `block_on`.

use std::future::Future;

use cairnq_protocol::Sql;

use cairnq_core::backend::Changes;

use crate::limits;
use crate::query::Query;
use crate::rows::{FromRow, Moved};
use cairnq_core::ErrorEnvelope;
use cairnq_core::backend::{KeyedSubmit, resolve_key_conflict};
use cairnq_core::backend::{SubmitRun, fail_undecodable, in_asked_order, lost_lease, submit_runs};
use cairnq_core::observe;
use cairnq_core::store::{
    CancelParams, ClaimDraw, ClaimParams, FailParams, HeartbeatBatchParams, HeartbeatParams, NewTask, ProgressParams,
    PurgeFilter, RepairParams, Repaired, RetryParams, SettleParams, SubmitManyParams, TaskRow, TaskSelector,
};
use cairnq_core::{Error, Result};
use cairnq_core::{HeldLease, Task, TaskRef, Undecodable};

/// Runs protocol statements inside one transaction of a backend: the
/// backend adds what its dialect needs (SQLite's `now_ms`) and reads each
/// row through its driver's [`SqlRow`](crate::SqlRow).
///
/// The futures carry no `Send` bound: a backend whose executor is `Send`
/// gets `Send` flows (auto traits follow the concrete type).
pub trait Executor {
    /// Runs `query` and decodes every row it returned as `T` (with a
    /// [`Decoder`](crate::Decoder): columns found once per run); a
    /// statement returning nothing gives an empty list.
    fn rows<T: FromRow>(&self, query: Query) -> impl Future<Output = Result<Vec<T>>>;

    /// Notes what a write of this transaction changed for the store's
    /// sleepers in this process, to publish after the commit (the flows
    /// call it after each write that queued or finished tasks). The
    /// default forgets it: right for a store whose sleepers hear of changes
    /// another way (Postgres: LISTEN/NOTIFY); `change` is then never run.
    fn note(&self, change: impl FnOnce(&mut Changes)) {
        let _ = change;
    }

    /// Takes the lock a keyed submit holds until its transaction ends
    /// (Postgres: an advisory lock on the key; SQLite's write transaction
    /// already is one).
    fn lock_key(&self, key: &str) -> impl Future<Output = Result<()>>;

    /// Inserts one task and answers with the row as written.
    fn insert(&self, task: &NewTask) -> impl Future<Output = Result<Task>>;

    /// Inserts consecutive unkeyed tasks with one statement; the rows in
    /// the order given.
    fn insert_unkeyed(&self, tasks: &[NewTask]) -> impl Future<Output = Result<Vec<Task>>>;

    /// Tries to lock each limit key of `keys` until the transaction ends,
    /// waiting for none (see [`LimitLocks`]). The default answers
    /// [`LimitLocks::Exclusive`]: right for a store whose write
    /// transactions never overlap (SQLite), wrong where claimers run at once.
    fn lock_limit_keys(&self, keys: &[String]) -> impl Future<Output = Result<LimitLocks>> {
        let _ = keys;
        std::future::ready(Ok(LimitLocks::Exclusive))
    }

    /// Asks the store to plan each statement the rest of this transaction
    /// runs once, as it will after a few runs anyway, where it would
    /// otherwise plan each run anew (Postgres plans a connection's first
    /// five runs of a statement for their values: 0.4-1.5 ms a time for the
    /// limit-aware claim's walk). The default does nothing.
    fn plan_once(&self) -> impl Future<Output = Result<()>> {
        std::future::ready(Ok(()))
    }

    /// How a flow reads several small ranges (a limit-aware claim's
    /// groups): see [`RangeReads`]. The default, [`RangeReads::Together`],
    /// suits a store reached over a connection.
    fn range_reads(&self) -> RangeReads {
        RangeReads::Together
    }
}

/// How [`Executor::range_reads`] wants several small range reads sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RangeReads {
    /// In one statement, which also acts on what it read (a limit-aware
    /// claim reads and claims a priority's groups at once): each statement
    /// costs the store work of its own (Postgres: a plan's run and a round
    /// trip's share).
    Together,
    /// One statement each: a statement is a call in this process (SQLite),
    /// and a plain range read beats one statement that sorts what it reads.
    Apart,
}

/// What [`Executor::lock_limit_keys`] got.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitLocks {
    /// No other claimer runs while this transaction does (SQLite's write
    /// transaction): every count it read is exact until it commits.
    Exclusive,
    /// The keys now held by this transaction; another claimer holds the
    /// rest (they are skipped this round). The flow counts held keys again.
    Granted(Vec<String>),
}

/// Whether [`claim_with`] enforces limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitMode {
    /// The database has no limits table (an installation another SDK made,
    /// opened as it is): claims limit nothing.
    Off,
    /// The database has the limits table of `ext_0006_limits`: each claim
    /// checks it, and takes the limit-aware draws when any limit is set.
    On,
}

/// The most tasks one multi-row insert carries.
const INSERT_CHUNK: usize = 1_000;

/// The first row a statement returned, decoded (an undecodable row is the
/// caller's [`Error::Undecodable`]).
fn first(rows: Vec<TaskRow>) -> Result<Option<Task>> {
    rows.into_iter().next().transpose().map_err(Undecodable::into_error)
}

/// Inserts `task`; with a key, in the caller's transaction: lock the key,
/// read its task (a vanished task frees it), apply the conflict rule,
/// cancel the recorded task when replacing a live one, insert, repoint.
pub async fn submit(exec: &impl Executor, task: &NewTask) -> Result<Task> {
    let Some(key) = &task.key else { return exec.insert(task).await };
    exec.lock_key(key).await?;
    let existing = exec.rows::<TaskRef>(Query::new(Sql::SelectKeyTask).arg("key", key)).await?.into_iter().next();
    let decision = resolve_key_conflict(task.conflict, key, existing.as_ref())?;
    if let Some(old) = existing.map(|old| TaskSelector::Id(old.id)) {
        match decision {
            KeyedSubmit::ReturnExisting => {
                if let Some(found) = first(exec.rows(Query::new(Sql::SelectTask).select(&old)).await?)? {
                    return Ok(found);
                }
            }
            KeyedSubmit::Insert { cancel_existing: true } => {
                cancel(exec, &CancelParams::new(old)).await?;
            }
            KeyedSubmit::Insert { cancel_existing: false } => {}
        }
    }
    let inserted = exec.insert(task).await?;
    exec.rows::<()>(Query::new(Sql::UpsertTaskKey).arg("key", key).arg("task_id", &inserted.id)).await?;
    Ok(inserted)
}

/// Submits `tasks` in order in the caller's transaction: a keyed task on
/// its own (it must see an earlier item's key), each run of unkeyed ones
/// with one multi-row insert.
pub async fn submit_many(exec: &impl Executor, params: &SubmitManyParams) -> Result<Vec<Task>> {
    let mut submitted = Vec::with_capacity(params.tasks.len());
    for run in submit_runs(&params.tasks, INSERT_CHUNK) {
        match run {
            SubmitRun::Keyed(task) => submitted.push(submit(exec, task).await?),
            SubmitRun::Unkeyed(run) => submitted.extend(exec.insert_unkeyed(run).await?),
        }
    }
    Ok(submitted)
}

/// One claim transaction: lease recovery (every expired lease in the
/// database), then each draw within its budgets. Recovery and the first
/// draw are issued together, in order, so a pipelining executor sends them
/// in one round trip. Limits are not enforced: see [`claim_with`].
pub async fn claim(exec: &impl Executor, params: &ClaimParams) -> Result<Vec<Task>> {
    claim_with(exec, params, LimitMode::Off).await
}

/// [`claim`], enforcing limits with [`LimitMode::On`]: the question "is any
/// limit set?" goes out with lease recovery, and the first draw is sent
/// with a guard that takes nothing when one is, so a claim on a database
/// without limits costs no extra round trip. When one is set, the draws
/// are limit-aware (see [`limits`]).
pub async fn claim_with(exec: &impl Executor, params: &ClaimParams, mode: LimitMode) -> Result<Vec<Task>> {
    let mut plan = params.plan();
    let expired = ErrorEnvelope::lease_expired().to_json();
    let recover = |sql| exec.rows::<Moved>(Query::new(sql).arg("error", &expired));
    let guarded = mode == LimitMode::On;
    let probe = guarded.then(|| exec.rows::<String>(limits::any_limits()));
    let first = params.draws.first().map(|draw| draw_once(exec, params, draw, plan.limit(0), guarded));
    let (canceled, requeued, failed, limited, first) = futures::try_join!(
        recover(Sql::RecoverCanceledLeases),
        recover(Sql::RecoverRequeuedLeases),
        recover(Sql::RecoverFailedLeases),
        async {
            match probe {
                Some(probe) => Ok(probe.await?.first().is_some_and(|any| any == "1")),
                None => Ok(false),
            }
        },
        async {
            match first {
                Some(draw) => draw.await,
                None => Ok((Vec::new(), 0)),
            }
        },
    )?;
    // A requeued task is due work on its queue; a canceled or failed one is done.
    exec.note(|changes| {
        requeued.iter().for_each(|moved| changes.queued_on(&moved.queue));
        for moved in canceled.iter().chain(&failed) {
            changes.finished(moved.id.clone(), Some(moved.queue.clone()));
        }
    });
    observe::leases_recovered([canceled, requeued, failed].iter().flatten().map(|moved| moved.queue.as_str()));
    let (mut claimed, drawn) = first;
    plan.took(0, drawn);
    if limited {
        claimed.extend(limits::claim_limited(exec, params, &mut plan, 0).await?);
        return Ok(claimed);
    }
    for (index, draw) in params.draws.iter().enumerate().skip(1) {
        let (taken, drawn) = draw_once(exec, params, draw, plan.limit(index), false).await?;
        plan.took(index, drawn);
        claimed.extend(taken);
    }
    Ok(claimed)
}

/// One draw of up to `limit` rows (with `unlimited_only`, none when any
/// limit is set). Every row drawn counts against the plan.
async fn draw_once(
    exec: &impl Executor,
    params: &ClaimParams,
    draw: &ClaimDraw,
    limit: u32,
    unlimited_only: bool,
) -> Result<(Vec<Task>, usize)> {
    if limit == 0 {
        return Ok((Vec::new(), 0));
    }
    let query = Query::new(Sql::ClaimDueTasks)
        .arg("worker_id", &params.worker_id)
        .arg("lease_ms", params.lease_ms)
        .arg("limit", i64::from(limit))
        .scope(&draw.queues, draw.names.as_deref());
    let query = if unlimited_only { query.flag("unlimited_only") } else { query };
    take_claimed(exec, params, exec.rows(query).await?).await
}

/// The tasks among rows a claim drew, and how many rows it drew; a row
/// that does not decode is failed here, in the claim's transaction and
/// owned by the claimer, and left out.
pub(crate) async fn take_claimed(
    exec: &impl Executor,
    params: &ClaimParams,
    rows: Vec<TaskRow>,
) -> Result<(Vec<Task>, usize)> {
    let drawn = rows.len();
    let (tasks, undecodable) = fail_undecodable(rows);
    for (row, envelope) in undecodable {
        // A row whose very id does not decode cannot be failed by id; lease
        // recovery takes it back until its attempts run out.
        let Some(id) = row.task_id else { continue };
        let query = Query::new(Sql::FailUndecodableTask)
            .arg("id", &id)
            .arg("worker_id", &params.worker_id)
            .arg("error", envelope);
        exec.rows::<()>(query).await?;
        exec.note(|changes| changes.finished(id, None));
    }
    Ok((tasks, drawn))
}

/// An ownership-checked write of one task: the row after the write, or
/// [`Error::LostLease`] when no row matched.
async fn owned(exec: &impl Executor, query: Query, task_id: &str, worker_id: &str) -> Result<Task> {
    let query = query.arg("id", task_id).arg("worker_id", worker_id);
    let task = first(exec.rows(query).await?)?.ok_or_else(|| lost_lease(task_id, worker_id))?;
    exec.note(|changes| changes.saw(&task));
    Ok(task)
}

/// Extends one lease.
pub async fn heartbeat(exec: &impl Executor, p: &HeartbeatParams) -> Result<Task> {
    owned(exec, Query::new(Sql::HeartbeatTask).arg("lease_ms", p.lease_ms), &p.task_id, &p.worker_id).await
}

/// Extends many leases; the ones still held, in the order asked.
pub async fn heartbeat_batch(exec: &impl Executor, p: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
    let query = Query::new(Sql::HeartbeatTasks)
        .arg("ids", p.task_ids.clone())
        .arg("worker_id", &p.worker_id)
        .arg("lease_ms", p.lease_ms);
    let held = exec.rows::<HeldLease>(query).await?;
    Ok(in_asked_order(p.task_ids.iter().map(String::as_str), held, |h| &h.id))
}

/// Records progress and/or message (`None` keeps the old value).
pub async fn progress(exec: &impl Executor, p: &ProgressParams) -> Result<Task> {
    let query = Query::new(Sql::UpdateProgress).arg("progress", p.progress).arg("message", p.message.clone());
    owned(exec, query, &p.task_id, &p.worker_id).await
}

/// Running -> succeeded, ignoring a pending cancel.
pub async fn succeed(exec: &impl Executor, p: &SettleParams) -> Result<Task> {
    owned(exec, Query::new(Sql::SucceedTask).arg("result", &p.result), &p.task_id, &p.worker_id).await
}

/// Running -> succeeded, or canceled when a cancel is pending.
pub async fn complete(exec: &impl Executor, p: &SettleParams) -> Result<Task> {
    owned(exec, Query::new(Sql::CompleteTask).arg("result", &p.result), &p.task_id, &p.worker_id).await
}

/// Fails an attempt: cancel wins, else requeue or fail.
pub async fn fail(exec: &impl Executor, p: &FailParams) -> Result<Task> {
    let query =
        Query::new(Sql::FailTask).arg("error", &p.error).arg("retryable", p.retryable).arg("delay_ms", p.delay_ms);
    owned(exec, query, &p.task_id, &p.worker_id).await
}

/// Queued -> canceled now; running -> cancel requested; else `None`.
pub async fn cancel(exec: &impl Executor, params: &CancelParams) -> Result<Option<Task>> {
    noted(exec, first(exec.rows(Query::new(Sql::CancelTask).select(&params.task)).await?)?)
}

/// `task`, as a write left it, noted for the store's sleepers.
fn noted(exec: &impl Executor, task: Option<Task>) -> Result<Option<Task>> {
    if let Some(task) = &task {
        exec.note(|changes| changes.saw(task));
    }
    Ok(task)
}

/// Failed or canceled -> queued now (attempt reset when asked); else `None`.
pub async fn retry(exec: &impl Executor, params: &RetryParams) -> Result<Option<Task>> {
    let query = Query::new(Sql::RetryTask).select(&params.task);
    let query = if params.reset_attempt { query.flag("reset_attempt") } else { query };
    noted(exec, first(exec.rows(query).await?)?)
}

/// Deletes terminal rows; their ids.
pub async fn purge(exec: &impl Executor, filter: &PurgeFilter) -> Result<Vec<String>> {
    exec.rows(Query::purge(filter)).await
}

/// Rows of the given queues no ordinary operation would move (see
/// [`Store::repair`](cairnq_core::Store::repair)).
pub async fn repair(exec: &impl Executor, params: &RepairParams) -> Result<Repaired> {
    let queues = params.queues.clone();
    let mut repaired = Repaired::default();
    repaired.expired = exec.rows(Query::new(Sql::ExpireUnleasedTasks).arg("queues", queues.clone())).await?;
    repaired.scheduled = exec.rows(Query::new(Sql::ScheduleUnscheduledTasks).arg("queues", queues)).await?;
    if !repaired.scheduled.is_empty() {
        // Which queue each made-due row is on is not returned; waking every
        // repaired queue's sleepers is the cheap superset.
        exec.note(|changes| params.queues.iter().for_each(|queue| changes.queued_on(queue)));
    }
    Ok(repaired)
}

/// Whether a database may be used, given the `protocol_version` its meta
/// table holds (`None`: no such row, or no meta table yet): a database
/// being installed may not have one yet; an installed one must hold
/// exactly this SDK's version.
pub fn check_protocol_version(found: Option<&str>, installed: Installed) -> Result<()> {
    let expected = cairnq_protocol::PROTOCOL_VERSION;
    match (found.map(str::trim), installed) {
        (Some(version), _) if version == expected.to_string() => Ok(()),
        (None, Installed::NotYet) => Ok(()),
        (found, _) => Err(Error::ProtocolVersionMismatch {
            found: found.map_or_else(|| "no protocol_version row".to_string(), str::to_string),
            expected,
        }),
    }
}

/// Where in its life a database is when its protocol version is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Before migrating: a database without the meta row is being created.
    NotYet,
    /// After migrating: the meta row must be there.
    Done,
}
