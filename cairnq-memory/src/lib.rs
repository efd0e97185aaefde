//! [`MemoryStore`]: a reference backend with no SQL at all — plain Rust
//! collections behind one lock — held to the same conformance suite as our
//! SQLite and Postgres backends. It is the worked example of the
//! backend-author guide (cairnq-testkit's README) and a fast test double
//! for applications, which add this crate as a dev-dependency and hold
//! their handlers to the protocol without a database file.
//!
//! **Not durable.** Every task lives in this process's memory and is gone
//! when the store is dropped; another process cannot open it. Use it in
//! tests, never to hold work that must survive a restart.
//!
//! Semantics are exactly PROTOCOL.md's, with SQLite's clock rules: "now"
//! comes from a [`Clock`] in epoch milliseconds, read once per operation.
//! Each operation runs under the lock as one transaction: it sees every
//! operation before it, and a failed one (a rejected key in a
//! `submit_many`, say) leaves nothing behind.
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "Writing a backend" (`docs/src/writing-a-backend.md`) is about
//! this crate.

mod dependencies;
mod limits;
mod schedules;
mod steps;
mod tables;
mod task_ops;
#[cfg(test)]
mod tests;
mod worker_ops;

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use cairnq_core::backend::WakeBoard;
use cairnq_core::store::{
    CancelParams, ChildrenParams, ClaimParams, CompleteBatchParams, CountQueuedParams, CountTasksParams,
    DeleteScheduleParams, FailParams, FireScheduleParams, GetParams, HeartbeatBatchParams, HeartbeatParams, LimitRow,
    LimitUsage, LimitUsageParams, LimitWaitParams, LimitsQuery, ListFilter, NewTask, Notifications,
    PauseScheduleParams, ProbeParams, ProgressParams, PurgeFilter, RemoveLimitParams, RepairParams, RetryParams,
    SaveScheduleParams, ScheduleQuery, ScheduleRead, ScheduleRow, ScheduleStore, SetLimitParams, SettleParams,
    StatsParams, StepStore, SubmitManyParams, TaskKeyParams, TaskRow,
};
use cairnq_core::{
    Capabilities, Clock, Error, HeldLease, QueueAge, Repaired, Result, Store, SystemClock, Task, TaskCount, TaskRef,
};

use tables::{Tables, Txn};

/// A cairnq store in this process's memory: every protocol operation on
/// plain collections, no database. Not durable (see the [module
/// docs](self)).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> cairnq_core::Result<()> {
/// use std::time::Duration;
/// use cairnq_core::store::ClaimDraw;
/// use cairnq_core::{CairnQ, TaskStatus};
/// use cairnq_memory::MemoryStore;
///
/// let client = CairnQ::new(MemoryStore::new());
/// let task = client.submit("resize", &serde_json::json!({"width": 640})).key("photo-1").await?;
/// let again = client.submit("resize", &serde_json::json!({"width": 640})).key("photo-1").await?;
/// assert_eq!(again.id, task.id, "a live task is reused by key");
///
/// let worker = client.worker_session("worker_1", Duration::from_secs(30))?;
/// let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()])], vec![]).await?;
/// assert_eq!(claimed[0].id, task.id);
/// worker.complete(&task.id, serde_json::json!({"bytes": 1234})).await?;
/// assert_eq!(client.get(&task.id).await?.map(|t| t.status), Some(TaskStatus::Succeeded));
/// # Ok(()) }
/// ```
pub struct MemoryStore {
    clock: Arc<dyn Clock>,
    /// The rows; `None` once closed.
    tables: Mutex<Option<Tables>>,
    sleepers: Arc<WakeBoard>,
    /// The schedules (extension `ext_0001_schedules`), by name.
    schedules: Mutex<schedules::Schedules>,
    /// The limits and rate state (extension `ext_0006_limits`); taken
    /// before `tables` when both are.
    limits: Mutex<limits::Limits>,
    /// Task dependencies (extension `ext_0008`); taken after `tables`.
    dependencies: Mutex<dependencies::Dependencies>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store reading "now" from `clock` (tests pin or advance
    /// time with one; leases, delays and purge ages are measured on it).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            tables: Mutex::new(Some(Tables::default())),
            sleepers: Arc::default(),
            schedules: Mutex::default(),
            limits: Mutex::default(),
            dependencies: Mutex::default(),
        }
    }

    /// Runs a read on the tables as they are now.
    fn read<T>(&self, read: impl FnOnce(&Tables, i64) -> Result<T>) -> Result<T> {
        // Every write completes under the lock or is rolled back before it
        // is released, and nothing that runs under it panics once writing
        // has begun (the clock is read first), so a lock poisoned by a
        // panicking clock still guards consistent tables.
        let guard = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let tables = guard.as_ref().ok_or(Error::StoreClosed)?;
        read(tables, self.clock.now_ms())
    }

    /// Runs one write as a transaction: all of it, or (on an error) none
    /// of it. Sleepers hear of what changed once the lock is released.
    fn write<T>(&self, write: impl FnOnce(&mut Txn<'_>) -> Result<T>) -> Result<T> {
        let (out, changes) = {
            let mut guard = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
            let tables = guard.as_mut().ok_or(Error::StoreClosed)?;
            let mut txn = Txn::new(tables, self.clock.now_ms());
            match write(&mut txn) {
                Ok(out) => {
                    if txn.changes.ended().next().is_some() {
                        dependencies::settle(&mut txn, &mut self.dependencies_lock());
                    }
                    (out, std::mem::take(&mut txn.changes))
                }
                Err(e) => {
                    txn.rollback();
                    return Err(e);
                }
            }
        };
        self.sleepers.publish(&changes);
        Ok(out)
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with_push_wakeups(true)
    }

    async fn submit(&self, task: &NewTask) -> Result<Task> {
        self.write(|txn| task_ops::submit(txn, task))
    }

    fn schedule_store(&self) -> Option<&dyn ScheduleStore> {
        Some(self)
    }

    fn step_store(&self) -> Option<&dyn StepStore> {
        Some(self)
    }

    fn dependency_store(&self) -> Option<&dyn cairnq_core::store::DependencyStore> {
        Some(self)
    }

    async fn submit_many(&self, params: &SubmitManyParams) -> Result<Vec<Task>> {
        self.write(|txn| task_ops::submit_many(txn, params))
    }

    async fn get(&self, params: &GetParams) -> Result<Option<Task>> {
        self.read(|tables, _| Ok(task_ops::get(tables, params)))
    }

    async fn get_status(&self, params: &GetParams) -> Result<Option<TaskRef>> {
        self.read(|tables, _| Ok(task_ops::get_status(tables, params)))
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRow>> {
        self.read(|tables, _| task_ops::list(tables, filter))
    }

    async fn stats(&self, params: &StatsParams) -> Result<Vec<TaskCount>> {
        self.read(|tables, _| Ok(task_ops::stats(tables, params)))
    }

    async fn oldest_due(&self, params: &StatsParams) -> Result<Vec<QueueAge>> {
        self.read(|tables, now_ms| Ok(task_ops::oldest_due(tables, now_ms, params)))
    }

    async fn count_queued(&self, params: &CountQueuedParams) -> Result<u64> {
        self.read(|tables, _| Ok(task_ops::count_queued(tables, params)))
    }

    async fn count_tasks(&self, params: &CountTasksParams) -> Result<u64> {
        self.read(|tables, _| Ok(task_ops::count_tasks(tables, params)))
    }

    async fn children(&self, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
        self.read(|tables, _| Ok(task_ops::children(tables, params)))
    }

    async fn task_key(&self, params: &TaskKeyParams) -> Result<Option<String>> {
        self.read(|tables, _| Ok(tables.key_of(&params.task_id).map(String::from)))
    }

    async fn cancel(&self, params: &CancelParams) -> Result<Option<Task>> {
        self.write(|txn| Ok(task_ops::cancel(txn, params)))
    }

    async fn retry(&self, params: &RetryParams) -> Result<Option<Task>> {
        self.write(|txn| Ok(task_ops::retry(txn, params)))
    }

    async fn purge(&self, filter: &PurgeFilter) -> Result<Vec<String>> {
        self.write(|txn| {
            let purged = task_ops::purge(txn, filter);
            self.dependencies_lock().forget(&purged);
            Ok(purged)
        })
    }

    async fn purgeable(&self, filter: &PurgeFilter) -> Result<Vec<TaskRow>> {
        self.read(|tables, now_ms| Ok(task_ops::purgeable(tables, now_ms, filter).map(|t| Ok(t.clone())).collect()))
    }

    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        self.read(|tables, now_ms| Ok(worker_ops::claimable(tables, now_ms, params)))
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        self.with_limits(|limits| self.write(|txn| Ok(worker_ops::claim(txn, params, limits))))
    }

    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        self.write(|txn| worker_ops::heartbeat(txn, params))
    }

    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        self.write(|txn| Ok(worker_ops::heartbeat_batch(txn, params)))
    }

    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        self.write(|txn| worker_ops::progress(txn, params))
    }

    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        self.write(|txn| worker_ops::succeed(txn, params))
    }

    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        self.write(|txn| worker_ops::complete(txn, &params.task_id, &params.worker_id, &params.result))
    }

    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        self.write(|txn| Ok(worker_ops::complete_batch(txn, params)))
    }

    async fn fail(&self, params: &FailParams) -> Result<Task> {
        self.write(|txn| worker_ops::fail(txn, params))
    }

    async fn repair(&self, params: &RepairParams) -> Result<Repaired> {
        self.write(|txn| Ok(worker_ops::repair(txn, params)))
    }

    fn notifications(&self) -> Notifications {
        self.sleepers.notifications()
    }

    async fn limits(&self, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
        self.read_limits(query)
    }

    async fn set_limit(&self, params: &SetLimitParams) -> Result<LimitRow> {
        self.upsert_limit(params)
    }

    async fn remove_limit(&self, params: &RemoveLimitParams) -> Result<bool> {
        self.delete_limit(params)
    }

    async fn limit_usage(&self, _params: &LimitUsageParams) -> Result<LimitUsage> {
        self.usage()
    }

    async fn limit_wait(&self, params: &LimitWaitParams) -> Result<Option<i64>> {
        self.rate_wait(params)
    }

    /// Drops every row; calls after this fail with [`Error::StoreClosed`].
    async fn close(&self) -> Result<()> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).take();
        Ok(())
    }
}

#[async_trait]
impl ScheduleStore for MemoryStore {
    async fn schedules(&self, query: &ScheduleQuery) -> Result<ScheduleRead> {
        self.read_schedules(query)
    }

    async fn save_schedule(&self, params: &SaveScheduleParams) -> Result<ScheduleRow> {
        self.upsert_schedule(params)
    }

    async fn pause_schedule(&self, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
        self.set_schedule_paused(params)
    }

    async fn delete_schedule(&self, params: &DeleteScheduleParams) -> Result<bool> {
        self.remove_schedule(params)
    }

    async fn fire_schedule(&self, params: &FireScheduleParams) -> Result<Option<Vec<Task>>> {
        self.fire(params)
    }
}
