//! The parameters of the seam's worker operations: the claim probe, claims,
//! leases, progress and settling. Each takes the ids it cannot do without
//! in its constructor and everything else through setters, so none has a
//! row of positional arguments to confuse.
//!
//! Times are integer milliseconds here, relative to the store's clock: this
//! is the seam, the one place they belong (applications pass `Duration`s).

use crate::envelope::ErrorEnvelope;
use crate::json::Json;

/// The lease a write asks for when its caller sets none (PROTOCOL.md's
/// worker default).
const DEFAULT_LEASE_MS: i64 = 30_000;

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
    /// A probe of these queues, for any name.
    pub fn new(queues: Vec<String>) -> Self {
        Self { queues, names: None }
    }

    /// Only these names (an empty list matches nothing).
    pub fn names(mut self, names: Vec<String>) -> Self {
        self.names = Some(names);
        self
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
    /// This draw's own cap (1 unless set).
    pub limit: u32,
    /// Indexes into [`ClaimParams::budgets`] this draw spends from.
    pub budgets: Vec<usize>,
}

impl ClaimDraw {
    /// A draw of one row from these queues, any name.
    pub fn new(queues: Vec<String>) -> Self {
        Self { queues, names: None, limit: 1, budgets: Vec::new() }
    }

    /// Only these names (an empty list draws nothing).
    pub fn names(mut self, names: Vec<String>) -> Self {
        self.names = Some(names);
        self
    }

    /// Any name (the default).
    pub fn any_name(mut self) -> Self {
        self.names = None;
        self
    }

    /// At most `limit` rows.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// Also spending from these shared budgets.
    pub fn spending(mut self, budgets: Vec<usize>) -> Self {
        self.budgets = budgets;
        self
    }
}

/// One claim transaction: lease recovery, then each draw in order. A draw
/// takes at most `min(its limit, every budget it spends from)`, and what it
/// took is subtracted from those budgets before the next draw — how a
/// worker's total concurrency, per-name caps and resources are honoured in
/// one transaction (see [`ClaimParams::plan`]).
///
/// ```
/// use cairnq_core::store::{ClaimDraw, ClaimParams};
/// let claim = ClaimParams::new("worker_1", 30_000).draw(ClaimDraw::new(vec!["default".into()]).limit(8));
/// assert_eq!(claim.draws[0].limit, 8);
/// ```
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
    /// A claim by `worker_id` with leases of `lease_ms`; add draws.
    pub fn new(worker_id: impl Into<String>, lease_ms: i64) -> Self {
        Self { worker_id: worker_id.into(), lease_ms, draws: Vec::new(), budgets: Vec::new() }
    }

    /// Adds a draw after the others.
    pub fn draw(mut self, draw: ClaimDraw) -> Self {
        self.draws.push(draw);
        self
    }

    /// The shared budgets the draws spend from.
    pub fn budgets(mut self, budgets: Vec<u32>) -> Self {
        self.budgets = budgets;
        self
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
    /// New lease length from now (>= 1; 30 s unless set).
    pub lease_ms: i64,
}

impl HeartbeatParams {
    /// Extend `task_id`'s lease (by 30 s unless [`lease_ms`](Self::lease_ms) says otherwise).
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), lease_ms: DEFAULT_LEASE_MS }
    }

    /// The new lease length from now.
    pub fn lease_ms(mut self, lease_ms: i64) -> Self {
        self.lease_ms = lease_ms;
        self
    }
}

/// Extend many leases of one worker in one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeartbeatBatchParams {
    /// Their owner.
    pub worker_id: String,
    /// The tasks.
    pub task_ids: Vec<String>,
    /// New lease length from now (>= 1; 30 s unless set).
    pub lease_ms: i64,
}

impl HeartbeatBatchParams {
    /// Extend every listed lease of `worker_id`.
    pub fn new(worker_id: impl Into<String>, task_ids: Vec<String>) -> Self {
        Self { worker_id: worker_id.into(), task_ids, lease_ms: DEFAULT_LEASE_MS }
    }

    /// The new lease length from now.
    pub fn lease_ms(mut self, lease_ms: i64) -> Self {
        self.lease_ms = lease_ms;
        self
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
    /// Progress for `task_id`; set a value, a message, or both.
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), progress: None, message: None }
    }

    /// The progress value (0..1).
    pub fn progress(mut self, progress: f64) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The progress message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
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
    /// The result (`null` unless set).
    pub result: Json,
}

impl SettleParams {
    /// Settle `task_id` (with a `null` result unless one is set).
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into(), worker_id: worker_id.into(), result: Json::null() }
    }

    /// The result.
    pub fn result(mut self, result: impl Into<Json>) -> Self {
        self.result = result.into();
        self
    }
}

/// Settle many tasks of one worker with `complete` semantics in one write
/// (see [`Store::complete_batch`](crate::Store::complete_batch)).
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
    /// Fail `task_id` permanently with a plain `task_error` envelope; set
    /// the envelope, retryability and delay as needed.
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>) -> Self {
        let error = ErrorEnvelope::new(crate::codes::TASK_ERROR, "the attempt failed").to_json();
        Self { task_id: task_id.into(), worker_id: worker_id.into(), error, retryable: false, delay_ms: 0 }
    }

    /// The error envelope to record.
    pub fn error(mut self, error: impl Into<Json>) -> Self {
        self.error = error.into();
        self
    }

    /// Whether another attempt may follow.
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// The requeue delay when retried.
    pub fn delay_ms(mut self, delay_ms: i64) -> Self {
        self.delay_ms = delay_ms;
        self
    }
}
