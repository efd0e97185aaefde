//! The storage seam: the one trait a backend implements.
//!
//! Each method is one operation of PROTOCOL.md, executed atomically by the
//! backend in its own dialect. Everything that is not SQL — validation,
//! defaults, ids, the key-conflict rule, stats zero-filling, backoff, envelopes,
//! the wait loop — lives above this trait in cairnq-core and is written once.
//!
//! # Stability
//!
//! Third parties implement [`Store`], so it follows semver strictly: methods
//! are only ever added with a default body, and every parameter is a
//! `#[non_exhaustive]` struct that can grow fields without breaking callers.
//! Run the `cairnq-testkit` conformance suite against your implementation.
//!
//! # Time
//!
//! Parameters carry relative times (`delay_ms`, `lease_ms`,
//! `older_than_ms`); the backend resolves them against its clock (SQLite: a
//! [`Clock`](crate::Clock); Postgres: the database clock).

use std::time::Duration;

use async_trait::async_trait;

use crate::error::{Error, Result, require_non_negative, require_positive, require_text};
use crate::json::Json;
use crate::keys::Conflict;
use crate::model::{HeldLease, Task, TaskCount, TaskRef, TaskStatus, Undecodable};

/// One row as a store read it: the task, or why it could not be decoded.
pub type TaskRow = std::result::Result<Task, Undecodable>;

/// Picks a task by id or by business key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskSelector {
    /// The task with this id.
    Id(String),
    /// The task the key currently points at.
    Key(String),
}

impl TaskSelector {
    /// The id or key, for messages.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Id(s) | Self::Key(s) => s,
        }
    }
}

/// What a backend can do beyond the required operations, so shared code
/// and the conformance suite branch explicitly instead of guessing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// [`Store::wait_for_change`] returns early on relevant commits.
    pub push_wakeups: bool,
    /// Settling inside the caller's own transaction is possible.
    pub transactional_settle: bool,
}

impl Capabilities {
    /// No optional capability.
    pub fn none() -> Self {
        Self::default()
    }

    /// With push wakeups set as given.
    pub fn with_push_wakeups(mut self, on: bool) -> Self {
        self.push_wakeups = on;
        self
    }

    /// With transactional settle set as given.
    pub fn with_transactional_settle(mut self, on: bool) -> Self {
        self.transactional_settle = on;
        self
    }
}

/// A validated task to insert. Built by the client (see
/// [`SubmitOptions`](crate::SubmitOptions)); the id and root id are already
/// resolved.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewTask {
    /// The new row's id (used only if a row is inserted).
    pub id: String,
    /// Handler name (non-empty).
    pub name: String,
    /// Queue name (non-empty).
    pub queue: String,
    /// The payload.
    pub payload: Json,
    /// A JSON object.
    pub metadata: Json,
    /// At least 1.
    pub max_attempts: i32,
    /// Higher runs first.
    pub priority: i32,
    /// Not claimable for this long (>= 0).
    pub delay_ms: i64,
    /// The submitting task, if any.
    pub parent_id: Option<String>,
    /// The chain's first task (the new id for a top-level task).
    pub root_id: String,
    /// Caller-chosen correlation.
    pub correlation_id: Option<String>,
    /// Business key; `None` means a plain insert.
    pub key: Option<String>,
    /// What to do when the key already points at a task.
    pub conflict: Conflict,
}

impl NewTask {
    /// The row inserting this task at `now_ms` writes, the columns the
    /// insert leaves to their defaults included: for a backend whose insert
    /// returns nothing.
    pub fn inserted_row(&self, now_ms: i64) -> Task {
        Task {
            id: self.id.clone(),
            name: self.name.clone(),
            queue: self.queue.clone(),
            status: TaskStatus::Queued,
            payload: self.payload.clone(),
            result: None,
            error: None,
            metadata: self.metadata.clone(),
            progress: None,
            message: None,
            attempt: 0,
            max_attempts: i64::from(self.max_attempts),
            priority: i64::from(self.priority),
            worker_id: None,
            lease_until_ms: None,
            run_at_ms: now_ms.saturating_add(self.delay_ms),
            cancel_requested_at_ms: None,
            parent_id: self.parent_id.clone(),
            root_id: Some(self.root_id.clone()),
            correlation_id: self.correlation_id.clone(),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            completed_at_ms: None,
        }
    }
}

/// Filters of [`Store::list`] (and [`CairnQ::list`](crate::CairnQ::list)); `None` filters are left
/// out of the SQL. `Default`: no filter, limit 100, offset 0.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only this status.
    pub status: Option<TaskStatus>,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this handler name.
    pub name: Option<String>,
    /// Only this chain.
    pub root_id: Option<String>,
    /// Only this correlation id.
    pub correlation_id: Option<String>,
    /// At most this many rows (>= 0).
    pub limit: i64,
    /// Skip this many rows (>= 0).
    pub offset: i64,
}

impl Default for ListFilter {
    fn default() -> Self {
        Self { status: None, queue: None, name: None, root_id: None, correlation_id: None, limit: 100, offset: 0 }
    }
}

impl ListFilter {
    /// No filter.
    pub fn new() -> Self {
        Self::default()
    }
    /// Only this status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// Only this queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }
    /// Only this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Only this root id.
    pub fn root_id(mut self, id: impl Into<String>) -> Self {
        self.root_id = Some(id.into());
        self
    }
    /// Only this correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }
    /// Page size and offset.
    pub fn page(mut self, limit: i64, offset: i64) -> Self {
        self.limit = limit;
        self.offset = offset;
        self
    }
}

/// What [`Store::purge`] (and [`CairnQ::purge`](crate::CairnQ::purge)) deletes: terminal rows
/// completed strictly before `now - older_than_ms`, oldest first, at most
/// `limit`. `Default`: any age, every terminal status,
/// limit 1000.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeFilter {
    /// Only rows completed more than this long ago (>= 0).
    pub older_than_ms: i64,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this status (must be terminal).
    pub status: Option<TaskStatus>,
    /// Only this handler name.
    pub name: Option<String>,
    /// At most this many rows (>= 1).
    pub limit: i64,
}

impl Default for PurgeFilter {
    fn default() -> Self {
        Self { older_than_ms: 0, queue: None, status: None, name: None, limit: 1000 }
    }
}

impl PurgeFilter {
    /// No filter.
    pub fn new() -> Self {
        Self::default()
    }
    /// Only rows completed more than `ms` ago.
    pub fn older_than_ms(mut self, ms: i64) -> Self {
        self.older_than_ms = ms;
        self
    }
    /// Only this queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }
    /// Only this status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// Only this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// At most this many rows.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// Refuses what no store may be asked: a negative age, a limit below 1,
    /// a non-terminal status, a queue or name holding a NUL character.
    pub fn validate(&self) -> Result<()> {
        require_non_negative("older_than_ms", self.older_than_ms)?;
        require_positive("limit", self.limit)?;
        for (field, value) in [("queue", &self.queue), ("name", &self.name)] {
            if let Some(value) = value {
                require_text(field, value)?;
            }
        }
        if let Some(status) = self.status.filter(|s| !s.is_terminal()) {
            return Err(Error::validation(
                "status",
                format!("{status} is not terminal; only terminal rows can be purged"),
            ));
        }
        Ok(())
    }
}

/// The read-only "anything to do?" question a worker asks before it takes
/// the write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeParams {
    /// Queues the worker serves.
    pub queues: Vec<String>,
    /// Names it has handlers for (`None`: any name).
    pub names: Option<Vec<String>>,
}

impl ProbeParams {
    /// A probe for these queues and names.
    pub fn new(queues: Vec<String>, names: Option<Vec<String>>) -> Self {
        Self { queues, names }
    }
}

/// One draw of a claim transaction: due queued rows on `queues` whose name
/// is in `names`, best first, up to a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimDraw {
    /// Queues to draw from (non-empty).
    pub queues: Vec<String>,
    /// `None`: any name; `Some(vec![])`: nothing.
    pub names: Option<Vec<String>>,
    /// This draw's own cap.
    pub limit: u32,
    /// Indexes into [`ClaimParams::budgets`] this draw spends from.
    pub budgets: Vec<usize>,
}

impl ClaimDraw {
    /// A draw with its own cap and no shared budget.
    pub fn new(queues: Vec<String>, names: Option<Vec<String>>, limit: u32) -> Self {
        Self { queues, names, limit, budgets: Vec::new() }
    }

    /// The same draw, also spending from these shared budgets.
    pub fn spending(mut self, budgets: Vec<usize>) -> Self {
        self.budgets = budgets;
        self
    }
}

/// One claim transaction: lease recovery, then each draw in order. A draw
/// takes at most `min(its limit, every budget it spends from)`, and what it
/// took is subtracted from those budgets before the next draw — how a
/// worker's total concurrency, per-name caps and resources are honoured in
/// one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimParams {
    /// The claiming worker.
    pub worker_id: String,
    /// Lease length (>= 1).
    pub lease_ms: i64,
    /// Draws in order.
    pub draws: Vec<ClaimDraw>,
    /// Shared budgets the draws spend from.
    pub budgets: Vec<u32>,
}

impl ClaimParams {
    /// A claim of up to `limit` rows in one draw.
    pub fn single(
        worker_id: impl Into<String>,
        lease_ms: i64,
        queues: Vec<String>,
        names: Option<Vec<String>>,
        limit: u32,
    ) -> Self {
        Self {
            worker_id: worker_id.into(),
            lease_ms,
            draws: vec![ClaimDraw::new(queues, names, limit)],
            budgets: Vec::new(),
        }
    }

    /// A claim of several draws over shared budgets.
    pub fn with_draws(worker_id: impl Into<String>, lease_ms: i64, draws: Vec<ClaimDraw>, budgets: Vec<u32>) -> Self {
        Self { worker_id: worker_id.into(), lease_ms, draws, budgets }
    }

    /// The budget bookkeeping backends use while running the draws.
    ///
    /// ```
    /// use cairnq_core::store::{ClaimDraw, ClaimParams};
    /// let q = vec!["default".to_string()];
    /// let p = ClaimParams::with_draws("w", 1000, vec![
    ///     ClaimDraw::new(q.clone(), None, 5).spending(vec![0]),
    ///     ClaimDraw::new(q, None, 5).spending(vec![0]),
    /// ], vec![7]);
    /// let mut plan = p.plan();
    /// assert_eq!(plan.limit(0), 5);
    /// plan.took(0, 5);
    /// assert_eq!(plan.limit(1), 2);
    /// ```
    pub fn plan(&self) -> DrawPlan<'_> {
        DrawPlan { params: self, remaining: self.budgets.clone() }
    }
}

/// Tracks what each shared budget has left during one claim transaction.
#[derive(Debug)]
pub struct DrawPlan<'a> {
    params: &'a ClaimParams,
    remaining: Vec<u32>,
}

impl DrawPlan<'_> {
    /// How many rows draw `index` may take now.
    pub fn limit(&self, index: usize) -> u32 {
        let Some(draw) = self.params.draws.get(index) else { return 0 };
        if draw.names.as_ref().is_some_and(Vec::is_empty) || draw.queues.is_empty() {
            return 0;
        }
        draw.budgets.iter().map(|&b| self.remaining.get(b).copied().unwrap_or(0)).fold(draw.limit, u32::min)
    }

    /// Records that draw `index` took `count` rows.
    pub fn took(&mut self, index: usize, count: usize) {
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        if let Some(draw) = self.params.draws.get(index) {
            for &b in &draw.budgets {
                if let Some(left) = self.remaining.get_mut(b) {
                    *left = left.saturating_sub(count);
                }
            }
        }
    }
}

/// Extend one lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeartbeatParams {
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub worker_id: String,
    /// New lease length from now (>= 1).
    pub lease_ms: i64,
}

impl HeartbeatParams {
    /// Extend `task_id`'s lease by `lease_ms` from now.
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>, lease_ms: i64) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), lease_ms }
    }
}

/// Extend many leases in one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeartbeatBatchParams {
    /// The tasks.
    pub task_ids: Vec<String>,
    /// Their owner.
    pub worker_id: String,
    /// New lease length from now (>= 1).
    pub lease_ms: i64,
}

impl HeartbeatBatchParams {
    /// Extend every listed lease by `lease_ms` from now.
    pub fn new(task_ids: Vec<String>, worker_id: impl Into<String>, lease_ms: i64) -> Self {
        Self { task_ids, worker_id: worker_id.into(), lease_ms }
    }
}

/// Record progress; `None` leaves the old value alone.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProgressParams {
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub worker_id: String,
    /// 0..1.
    pub progress: Option<f64>,
    /// Free text.
    pub message: Option<String>,
}

impl ProgressParams {
    /// Progress for `task_id`.
    pub fn new(
        task_id: impl Into<String>,
        worker_id: impl Into<String>,
        progress: Option<f64>,
        message: Option<String>,
    ) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), progress, message }
    }
}

/// Settle a task with a result (`succeed` / `complete`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SettleParams {
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub worker_id: String,
    /// The result.
    pub result: Json,
}

impl SettleParams {
    /// Settle `task_id` with `result`.
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>, result: impl Into<Json>) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), result: result.into() }
    }
}

/// Settle many tasks of one worker with `complete` semantics in one write
/// (see [`Store::complete_batch`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompleteBatchParams {
    /// Their owner.
    pub worker_id: String,
    /// `(task id, result)` pairs; each id at most once.
    pub completions: Vec<(String, Json)>,
}

impl CompleteBatchParams {
    /// Complete each listed task with its result.
    pub fn new(worker_id: impl Into<String>, completions: Vec<(String, Json)>) -> Self {
        Self { worker_id: worker_id.into(), completions }
    }
}

/// Fail an attempt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FailParams {
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub worker_id: String,
    /// The error envelope (a JSON object).
    pub error: Json,
    /// Whether another attempt may follow.
    pub retryable: bool,
    /// Requeue delay when retried (>= 0).
    pub delay_ms: i64,
}

impl FailParams {
    /// Fail `task_id` with `error`.
    pub fn new(
        task_id: impl Into<String>,
        worker_id: impl Into<String>,
        error: impl Into<Json>,
        retryable: bool,
        delay_ms: i64,
    ) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), error: error.into(), retryable, delay_ms }
    }
}

/// Which queues [`Store::repair`] looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairParams {
    /// The queues to repair (a worker passes its own).
    pub queues: Vec<String>,
}

impl RepairParams {
    /// Repair rows of these queues.
    pub fn new(queues: Vec<String>) -> Self {
        Self { queues }
    }
}

/// What [`Store::repair`] changed: rows no ordinary operation would have
/// moved, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repaired {
    /// Running rows that had no lease: given one that ends now, so the next
    /// claim's lease recovery takes them.
    pub expired: Vec<String>,
    /// Queued rows that had no `run_at_ms`: made due now.
    pub scheduled: Vec<String>,
}

impl Repaired {
    /// Whether nothing needed repair.
    pub fn is_empty(&self) -> bool {
        self.expired.is_empty() && self.scheduled.is_empty()
    }
}

/// A watch from [`Store::watch_for_change`]: completes once something it
/// watches may have changed since it was taken.
pub type ChangeWatch = futures::future::BoxFuture<'static, ()>;

/// What a sleeper in [`Store::wait_for_change`] is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// A task became queued on one of these queues (an idle worker).
    Queued(Vec<String>),
    /// This task became terminal (`wait` / `call`).
    TaskDone(String),
}

/// The storage seam: one method per PROTOCOL.md operation.
///
/// Ownership-checked worker writes (`heartbeat`, `progress`, `succeed`,
/// `complete`, `fail`) match only `status = running AND worker_id = caller
/// AND lease_until_ms > now`, and return [`Error::LostLease`] when nothing
/// matched. Inputs arrive validated; a backend does not re-validate them.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short backend name, e.g. `sqlite`, for messages.
    fn backend(&self) -> &'static str;

    /// Optional capabilities; none by default.
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    /// Inserts a task. With a key: in one transaction, reads the key's task
    /// (a vanished task frees the key), applies
    /// [`resolve_key_conflict`](crate::keys::resolve_key_conflict), and
    /// repoints the key when it inserts.
    async fn submit(&self, task: &NewTask) -> Result<Task>;

    /// Submits every task in one transaction, in order, with the same key
    /// semantics per item (a later item sees an earlier item's key). All or
    /// nothing.
    async fn submit_many(&self, tasks: &[NewTask]) -> Result<Vec<Task>>;

    /// The whole row, or `None`; [`Error::Undecodable`] for a row that
    /// does not decode.
    async fn get(&self, task: &TaskSelector) -> Result<Option<Task>>;

    /// Only id and status, or `None`.
    async fn get_status(&self, task: &TaskSelector) -> Result<Option<TaskRef>>;

    /// Rows matching the filters, newest first (`created_at_ms desc, id desc`),
    /// each decoded on its own: a row that does not decode is reported in
    /// its place, never a failure of the whole page.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRow>>;

    /// Row counts grouped by queue and status (only non-zero groups needed),
    /// for one queue or all. A status string no protocol state names is
    /// counted with `status: None`, never an error.
    async fn stats(&self, queue: Option<&str>) -> Result<Vec<TaskCount>>;

    /// The number of queued rows on `queue`, counting at most `at_most`.
    async fn count_queued(&self, queue: &str, at_most: u64) -> Result<u64>;

    /// Queued -> canceled now; running -> cancel requested; else `None`.
    async fn cancel(&self, task: &TaskSelector) -> Result<Option<Task>>;

    /// Failed or canceled -> queued now, clearing error, worker, lease,
    /// cancel flag, completed_at, progress and message; attempt back to 0
    /// only with `reset_attempt`. Else `None`.
    async fn retry(&self, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>>;

    /// Deletes terminal rows; returns their ids.
    async fn purge(&self, filter: &PurgeFilter) -> Result<Vec<String>>;

    /// Read-only: is anything due for these queues and names, or has any
    /// lease expired?
    async fn claimable(&self, params: &ProbeParams) -> Result<bool>;

    /// One write transaction: recover every expired lease, then run the
    /// draws (see [`ClaimParams::plan`]); returns the claimed rows. A drawn
    /// row that does not decode is failed at once, in the same transaction,
    /// with [`ErrorEnvelope::undecodable`](crate::ErrorEnvelope::undecodable)
    /// (see [`fail_undecodable`]), and left out; the rest are returned.
    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>>;

    /// Extends one lease; the row after the write.
    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task>;

    /// Extends many leases in one statement; the leases still held, in the
    /// order asked (an absent id lost its lease).
    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>>;

    /// Records progress and/or message.
    async fn progress(&self, params: &ProgressParams) -> Result<Task>;

    /// Running -> succeeded with progress 1.0, ignoring a pending cancel.
    async fn succeed(&self, params: &SettleParams) -> Result<Task>;

    /// Like succeed, unless a cancel was requested: then -> canceled,
    /// leaving result and progress as they were.
    async fn complete(&self, params: &SettleParams) -> Result<Task>;

    /// [`complete`](Self::complete) for many tasks of one worker in one
    /// write: the tasks settled (id and the status they ended in), in the
    /// order asked; an absent id lost its lease. Workers settle through this
    /// so one write (and, on a durable store, one commit) covers every task
    /// that finished meanwhile. The default completes one task at a time.
    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        let mut settled = Vec::with_capacity(params.completions.len());
        for (task_id, result) in &params.completions {
            match self.complete(&SettleParams::new(task_id, &params.worker_id, result.clone())).await {
                Ok(task) => settled.push(TaskRef { id: task.id, status: task.status }),
                Err(Error::LostLease { .. }) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(settled)
    }

    /// Cancel requested -> canceled; retryable with attempts left -> queued
    /// after `delay_ms` (clearing worker, progress, message); else failed.
    /// The error is recorded on every branch.
    async fn fail(&self, params: &FailParams) -> Result<Task>;

    /// Repairs rows of `params.queues` that no ordinary operation would
    /// ever move (a foreign or broken writer left them so), in one
    /// transaction: a running row without a lease gets a lease that ends now
    /// (lease recovery then treats it as expired), a queued row without
    /// `run_at_ms` becomes due now. Workers call it at start and
    /// periodically. The default repairs nothing (a store whose rows cannot
    /// get into those states).
    async fn repair(&self, params: &RepairParams) -> Result<Repaired> {
        let _ = params;
        Ok(Repaired::default())
    }

    /// Starts watching for `wake` NOW; the future completes once something
    /// relevant to it may have changed since this call. Take the watch
    /// before reading the store and await it (under a timeout) after, so a
    /// change that commits between the read and the wait still cuts the
    /// wait short. Polling stays the source of truth: a watch only cuts
    /// sleeps short. The default never completes (no push wakeups).
    fn watch_for_change(&self, wake: &Wake) -> ChangeWatch {
        let _ = wake;
        Box::pin(std::future::pending())
    }

    /// Sleeps until something relevant to `wake` may have changed, or
    /// `timeout` passes: a watch taken now (see
    /// [`watch_for_change`](Self::watch_for_change)), bounded by `timeout`.
    async fn wait_for_change(&self, wake: &Wake, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.watch_for_change(wake)).await;
    }

    /// Releases the backend's connections and threads. Calls after close
    /// fail with [`Error::StoreClosed`].
    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

/// The `LostLease` error for an ownership-checked write that matched nothing.
pub fn lost_lease(task_id: &str, worker_id: &str) -> Error {
    Error::LostLease { task_id: task_id.to_string(), worker_id: worker_id.to_string() }
}

/// `found` rearranged into the order the ids were `asked`, for batch writes
/// whose statements return rows in no particular order; an id that found
/// nothing is left out.
pub fn in_asked_order<'a, T>(
    asked: impl IntoIterator<Item = &'a str>,
    found: Vec<T>,
    id: impl Fn(&T) -> &str,
) -> Vec<T> {
    let mut by_id: std::collections::HashMap<String, T> =
        found.into_iter().map(|item| (id(&item).to_string(), item)).collect();
    asked.into_iter().filter_map(|wanted| by_id.remove(wanted)).collect()
}

/// Splits the rows a claim drew into the tasks to run and the rows to fail
/// as undecodable, each with the envelope to record (backends then fail
/// those in the claim's own transaction, owned by the claiming worker).
pub fn fail_undecodable(rows: Vec<TaskRow>) -> (Vec<Task>, Vec<(Undecodable, Json)>) {
    let mut tasks = Vec::with_capacity(rows.len());
    let mut bad = Vec::new();
    for row in rows {
        match row {
            Ok(task) => tasks.push(task),
            Err(row) => {
                let envelope = crate::envelope::ErrorEnvelope::undecodable(&row).to_json();
                bad.push((row, envelope));
            }
        }
    }
    (tasks, bad)
}

/// One step of a `submit_many` (see [`submit_runs`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SubmitRun<'a> {
    /// A keyed task, submitted on its own: it must see an earlier item's key.
    Keyed(&'a NewTask),
    /// Consecutive unkeyed tasks, at most the asked chunk size: one
    /// multi-row insert.
    Unkeyed(&'a [NewTask]),
}

/// `tasks` in order, cut into keyed tasks and runs of at most `chunk`
/// unkeyed ones, so a backend inserts each run with one statement.
///
/// ```
/// # use cairnq_core::store::{submit_runs, SubmitRun};
/// let runs: Vec<SubmitRun<'_>> = submit_runs(&[], 100).collect();
/// assert!(runs.is_empty());
/// ```
pub fn submit_runs(tasks: &[NewTask], chunk: usize) -> impl Iterator<Item = SubmitRun<'_>> {
    let mut rest = tasks;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        if first.key.is_some() {
            rest = &rest[1..];
            return Some(SubmitRun::Keyed(first));
        }
        let run = rest.iter().take(chunk.max(1)).take_while(|t| t.key.is_none()).count();
        let (now, later) = rest.split_at(run);
        rest = later;
        Some(SubmitRun::Unkeyed(now))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(key: Option<&str>) -> NewTask {
        NewTask {
            id: crate::id::new_task_id(),
            name: "n".into(),
            queue: "q".into(),
            payload: Json::null(),
            metadata: Json::empty_object(),
            max_attempts: 3,
            priority: 0,
            delay_ms: 0,
            parent_id: None,
            root_id: "r".into(),
            correlation_id: None,
            key: key.map(str::to_string),
            conflict: Conflict::default(),
        }
    }

    #[test]
    fn submit_runs_keep_order_split_at_keys_and_respect_the_chunk() {
        let tasks: Vec<NewTask> = [None, None, None, Some("a"), Some("b"), None].into_iter().map(task).collect();
        let shape: Vec<(bool, usize)> = submit_runs(&tasks, 2)
            .map(|run| match run {
                SubmitRun::Keyed(_) => (true, 1),
                SubmitRun::Unkeyed(run) => (false, run.len()),
            })
            .collect();
        assert_eq!(shape, [(false, 2), (false, 1), (true, 1), (true, 1), (false, 1)]);
        let ids: Vec<&str> = submit_runs(&tasks, 2)
            .flat_map(|run| match run {
                SubmitRun::Keyed(t) => std::slice::from_ref(t),
                SubmitRun::Unkeyed(run) => run,
            })
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids, tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), "every task once, in order");
        assert_eq!(submit_runs(&tasks[..1], 0).count(), 1, "a zero chunk still makes progress");
    }
}
