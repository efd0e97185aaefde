//! The storage seam: the one trait a backend implements, and its
//! parameters.
//!
//! Each method is one operation of PROTOCOL.md, executed atomically by the
//! backend in its own dialect. Everything that is not SQL — validation,
//! defaults, ids, the key-conflict rule, stats zero-filling, backoff, envelopes,
//! the wait loop — lives above this trait in cairnq-core and is written once;
//! what a backend shares with other backends lives in
//! [`backend`](crate::backend).
//!
//! # Stability
//!
//! Third parties implement [`Store`], so it follows semver strictly: methods
//! are only ever added with a default body, every method takes exactly one
//! `#[non_exhaustive]` parameter type that can grow fields without breaking
//! callers or implementors, and no constructor takes more than the two ids
//! an operation cannot do without (the rest are setters). Run the
//! `cairnq-testkit` conformance suite against your implementation.
//!
//! # Time
//!
//! Parameters carry relative times in integer milliseconds (`delay_ms`,
//! `lease_ms`, `older_than_ms`); the backend resolves them against its clock
//! (SQLite: a [`Clock`](crate::Clock); Postgres: the database clock).

mod dependencies;
mod fan_out;
mod feed;
mod limit_params;
mod listing;
mod notifications;
mod read_params;
mod schedule_params;
mod schedule_store;
mod step_params;
mod step_store;
mod task_params;
mod worker_params;

use std::time::Duration;

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::model::{HeldLease, QueueAge, Task, TaskCount, TaskRef, Undecodable};

pub use dependencies::{DependenciesParams, DependencyStore, SubmitAfterParams, TaskWaitsParams};
pub use fan_out::{FanOut, FanOutParams};
pub use feed::{Change, ChangeFeed, FeedParams, WakeupsLost};
pub use limit_params::{
    KeyUsage, LimitRow, LimitUsage, LimitUsageParams, LimitWaitParams, LimitsQuery, RemoveLimitParams, SetLimitParams,
};
pub use notifications::{Notifications, PushSource};
pub use read_params::{ChildrenParams, CountTasksParams, TaskKeyParams};
pub use schedule_params::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow,
};
pub use schedule_store::ScheduleStore;
pub use step_params::{SaveStepParams, StepsParams};
pub use step_store::StepStore;
pub use task_params::{
    CancelParams, CountQueuedParams, GetParams, ListFilter, NewTask, PurgeFilter, RepairParams, Repaired, RetryParams,
    StatsParams, SubmitManyParams, TaskSelector,
};
pub use worker_params::{
    ClaimDraw, ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ProbeParams,
    ProgressParams, SettleParams,
};

/// One row as a store read it: the task, or why it could not be decoded.
pub type TaskRow = std::result::Result<Task, Undecodable>;

/// What a backend can do beyond the required operations, so shared code
/// and the conformance suite branch explicitly instead of guessing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// [`Store::notifications`]' watches complete on relevant commits
    /// (else they never do, and waiters only poll).
    pub push_wakeups: bool,
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
}

/// A watch from [`Notifications::watch`]: completes once something it
/// watches may have changed since it was taken.
pub type ChangeWatch = futures::future::BoxFuture<'static, ()>;

/// What a sleeper in [`wait_for_change`] is waiting for.
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

    /// Where the database is, for people reading a report: `host:port`
    /// for a server, a path for a file. `None` (the default) when the
    /// backend does not say.
    fn endpoint(&self) -> Option<String> {
        None
    }

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
    async fn submit_many(&self, params: &SubmitManyParams) -> Result<Vec<Task>>;

    /// The whole row, or `None`; [`Error::Undecodable`] for a row that
    /// does not decode.
    async fn get(&self, params: &GetParams) -> Result<Option<Task>>;

    /// Only id and status, or `None`.
    async fn get_status(&self, params: &GetParams) -> Result<Option<TaskRef>>;

    /// Rows matching the filters, newest first (`created_at_ms desc, id desc`),
    /// each decoded on its own: a row that does not decode is reported in
    /// its place, never a failure of the whole page.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRow>>;

    /// Row counts grouped by queue and status (only non-zero groups needed),
    /// for one queue or all. A status string no protocol state names is
    /// counted with `status: None`, never an error.
    async fn stats(&self, params: &StatsParams) -> Result<Vec<TaskCount>>;

    /// Per queue (one, or all), its queued task that has waited longest
    /// and how long, by the store's clock. A task waits from the moment it
    /// became due, [`Task::due_at_ms`] (the later of `run_at_ms` and its
    /// creation): a delayed task has not started waiting, so a queue with
    /// no due task is absent. The default reads nothing (`[]`): a store
    /// that cannot tell reports no queue age.
    async fn oldest_due(&self, params: &StatsParams) -> Result<Vec<QueueAge>> {
        let _ = params;
        Ok(Vec::new())
    }

    /// The number of queued rows on a queue, counting at most `at_most`.
    async fn count_queued(&self, params: &CountQueuedParams) -> Result<u64>;

    /// How many tasks [`CountTasksParams::filter`] matches (created at or
    /// after `since_ms`, when set), counting at most `at_most`: a bounded
    /// read whatever the table's size. The default counts
    /// [`list`](Self::list) pages (correct, and as costly as reading the
    /// rows).
    async fn count_tasks(&self, params: &CountTasksParams) -> Result<u64> {
        listing::count(self, params).await
    }

    /// The tasks `task_id` submitted (its rows as `parent_id`), newest
    /// first, at most `limit`; none for a missing task. The default reads
    /// the parent's chain ([`list`](Self::list) by its `root_id`) and keeps
    /// its children.
    async fn children(&self, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
        listing::children(self, params).await
    }

    /// The business key pointing at the task now, if any (a key whose task
    /// was replaced points at the new one). The default: `None`, a store
    /// that cannot tell shows no key.
    async fn task_key(&self, params: &TaskKeyParams) -> Result<Option<String>> {
        let _ = params;
        Ok(None)
    }

    /// Queued -> canceled now; running -> cancel requested; else `None`.
    async fn cancel(&self, params: &CancelParams) -> Result<Option<Task>>;

    /// Failed or canceled -> queued now, clearing error, worker, lease,
    /// cancel flag, completed_at, progress and message; attempt back to 0
    /// only with `reset_attempt`. Else `None`.
    async fn retry(&self, params: &RetryParams) -> Result<Option<Task>>;

    /// Deletes terminal rows; returns their ids.
    async fn purge(&self, filter: &PurgeFilter) -> Result<Vec<String>>;

    /// The rows [`purge`](Self::purge) would delete now, oldest completed
    /// first, at most `filter.limit`, deleting nothing: a purge's preview.
    /// The default reads every terminal row of the filter's queue and name
    /// ([`list`](Self::list) pages) and keeps those completed before the
    /// cutoff by the system clock (correct, and as costly as the rows); a
    /// store with SQL reads the purge's own index instead.
    async fn purgeable(&self, filter: &PurgeFilter) -> Result<Vec<TaskRow>> {
        listing::purgeable(self, filter).await
    }

    /// Read-only: is anything due for these queues and names, or has any
    /// lease expired?
    async fn claimable(&self, params: &ProbeParams) -> Result<bool>;

    /// One write transaction: recover every expired lease, then run the
    /// draws (see [`ClaimParams::plan`]); returns the claimed rows. A drawn
    /// row that does not decode is failed at once, in the same transaction,
    /// with [`ErrorEnvelope::undecodable`](crate::ErrorEnvelope::undecodable)
    /// (see [`fail_undecodable`](crate::backend::fail_undecodable)), and
    /// left out; the rest are returned.
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
            match self.complete(&SettleParams::new(task_id, &params.worker_id).result(result.clone())).await {
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

    /// The store's push notifications: one handle that makes watches
    /// (an idle worker, a `wait`), feeds (long-lived watchers) and says
    /// when push wakeups stop for good. Polling stays the source of truth:
    /// notifications only cut sleeps short. A store reporting
    /// [`push_wakeups`](Capabilities::push_wakeups) should return
    /// [`Notifications::push`]. The default is [`Notifications::none`]
    /// (watches only time out, no feed, wakeups never pushed).
    fn notifications(&self) -> Notifications {
        Notifications::none()
    }

    /// The store's schedules (extension `ext_0001_schedules`), when it
    /// keeps any: a capability, so a store without them implements nothing
    /// for them. `None` by default: the client answers
    /// [`Error::UnsupportedBackend`] and workers fire no schedules.
    fn schedule_store(&self) -> Option<&dyn ScheduleStore> {
        None
    }

    /// The store's durable steps (extension `ext_0009_steps`), when it
    /// keeps any. `None` by default: the client shows no steps, and a
    /// handler's step fails with [`Error::UnsupportedBackend`].
    fn step_store(&self) -> Option<&dyn StepStore> {
        None
    }

    /// The store's task dependencies (extension `ext_0008`), when it keeps
    /// them: a capability, like [`schedule_store`](Self::schedule_store).
    /// `None` by default: a submit with `after` is refused with
    /// [`Error::UnsupportedBackend`].
    fn dependency_store(&self) -> Option<&dyn DependencyStore> {
        None
    }

    /// Limits (extension `ext_0006_limits`) as [`LimitsQuery`] asks, by
    /// key. The default: [`Error::UnsupportedBackend`] (a store without
    /// flow control; its claims limit nothing).
    async fn limits(&self, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
        let _ = query;
        Err(unsupported(self.backend(), "limits"))
    }

    /// Creates or replaces a limit; the row as stored. Claims from the next
    /// one on enforce it (see [`Limit`](crate::Limit)).
    async fn set_limit(&self, params: &SetLimitParams) -> Result<LimitRow> {
        let _ = params;
        Err(unsupported(self.backend(), "set_limit"))
    }

    /// Deletes a limit; whether there was one.
    async fn remove_limit(&self, params: &RemoveLimitParams) -> Result<bool> {
        let _ = params;
        Err(unsupported(self.backend(), "remove_limit"))
    }

    /// How many tasks of each limit key run and wait, and the keys' rate
    /// state (for `cairnq limit ls` and dashboards; a read that counts the
    /// running and queued rows that carry a key). The default:
    /// [`Error::UnsupportedBackend`].
    async fn limit_usage(&self, params: &LimitUsageParams) -> Result<LimitUsage> {
        let _ = params;
        Err(unsupported(self.backend(), "limit_usage"))
    }

    /// Milliseconds from the store's now until a rate limit next lets a
    /// start of a key it held back at the params'
    /// [`since`](LimitWaitParams::since) through, so a worker whose claim
    /// found only throttled work sleeps until then rather than a whole
    /// poll; `Some(0)` when such a rate has opened since (claim again now:
    /// see [`LimitBook::rate_wait`](crate::backend::LimitBook::rate_wait)).
    /// `None` (the default): no rate held a key back.
    async fn limit_wait(&self, params: &LimitWaitParams) -> Result<Option<i64>> {
        let _ = params;
        Ok(None)
    }

    /// Releases the backend's connections and threads. Calls after close
    /// fail with [`Error::StoreClosed`].
    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

fn unsupported(backend: &'static str, operation: &'static str) -> Error {
    Error::UnsupportedBackend { operation, backend }
}

/// Sleeps until something relevant to `wake` may have changed, or `timeout`
/// passes: a watch taken now (see [`Notifications::watch`]), bounded by
/// `timeout`. Take a watch yourself when a read comes between.
pub async fn wait_for_change(store: &dyn Store, wake: &Wake, timeout: Duration) {
    let _ = tokio::time::timeout(timeout, store.notifications().watch(wake)).await;
}
