//! Helpers every test crate of the workspace shares, written once: a
//! fresh client from a factory, waiting until something holds or a task
//! ends, counting rows by status, the clock.
//!
//! They panic on failure, as test code does.

use std::future::Future;
use std::time::Duration;

use cairnq_core::store::{
    ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ProgressParams, SettleParams,
};
use cairnq_core::{CairnQ, Error, HeldLease, Result, Task, TaskRef, TaskStatus, WaitOptions, WorkerSession};

use crate::{BackendFactory, FreshStore};

/// How long [`eventually`] and [`finished`] wait: far longer than anything
/// they wait for takes on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A fresh store from `factory` and a client over it.
pub async fn fresh(factory: &dyn BackendFactory) -> (CairnQ, FreshStore) {
    let fresh = factory.fresh().await.expect("the factory makes a fresh store");
    (CairnQ::from_shared(fresh.store.clone()), fresh)
}

/// A lease holder on `client` as `worker_id` whose leases last `lease`
/// (what a test claims and settles by hand through).
pub fn session(client: &CairnQ, worker_id: &str, lease: Duration) -> WorkerSession {
    client.worker_session(worker_id, lease).expect("a valid worker id and lease")
}

/// The schedules of a store the test knows keeps them.
pub fn schedules_of(store: &dyn cairnq_core::Store) -> &dyn cairnq_core::store::ScheduleStore {
    store.schedule_store().expect("this store keeps schedules")
}

/// Polls `probe` every 10 ms until it is true; panics naming `what` after
/// [`PATIENCE`].
pub async fn eventually<F, Fut>(what: &str, probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_within(what, PATIENCE, probe).await;
}

/// [`eventually`] with a limit of the caller's.
pub async fn eventually_within<F, Fut>(what: &str, limit: Duration, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !probe().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out after {limit:?} waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the task is terminal ([`PATIENCE`] at most) and returns its
/// row.
pub async fn finished(client: &CairnQ, task_id: &str) -> Task {
    let wait = WaitOptions::new().timeout(PATIENCE).polling(Duration::from_millis(10), Duration::from_millis(50));
    client.wait(task_id, &wait).await.expect("the task finishes in time")
}

/// How many rows of `status` the client sees, on every queue.
pub async fn count(client: &CairnQ, status: TaskStatus) -> u64 {
    let stats = client.stats(None).await.expect("stats");
    stats.values().map(|c| c.get(status)).sum()
}

/// A clock a test sets by hand (for stores that take a
/// [`Clock`](cairnq_core::Clock): SQLite's options, `MemoryStore::with_clock`).
#[derive(Debug, Default)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// Sets now to `now_ms`.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl cairnq_core::Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The lease holder's calls as the seam spells them (one params struct
/// each, worker id and lease inside), made through a [`WorkerSession`] of
/// the params' worker: what tests that claim and settle by hand, a row at a
/// time, write. `use cairnq_testkit::support::ByParams` to call them on a
/// client.
#[async_trait::async_trait]
pub trait ByParams {
    /// [`WorkerSession::claim`] as `params.worker_id`, for `params.lease_ms`.
    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>>;
    /// [`WorkerSession::heartbeat`].
    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task>;
    /// [`WorkerSession::heartbeat_batch`].
    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>>;
    /// [`WorkerSession::progress`].
    async fn progress(&self, params: &ProgressParams) -> Result<Task>;
    /// [`WorkerSession::succeed`].
    async fn succeed(&self, params: &SettleParams) -> Result<Task>;
    /// [`WorkerSession::complete`].
    async fn complete(&self, params: &SettleParams) -> Result<Task>;
    /// [`WorkerSession::complete_batch`].
    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>>;
    /// [`WorkerSession::fail`]: retried after `delay_ms` when retryable.
    async fn fail(&self, params: &FailParams) -> Result<Task>;
}

/// A session of `worker_id` holding leases for `lease_ms` (a negative
/// lease has no Duration: refused as the session refuses a zero one).
fn session_ms(client: &CairnQ, worker_id: &str, lease_ms: i64) -> Result<WorkerSession> {
    let lease =
        u64::try_from(lease_ms).map_err(|_| Error::validation("lease", format!("{lease_ms} ms is negative")))?;
    client.worker_session(worker_id, Duration::from_millis(lease))
}

/// The lease of the session a settle goes through (a settle renews
/// nothing: any valid lease will do).
const SETTLE_LEASE_MS: i64 = 30_000;

#[async_trait::async_trait]
impl ByParams for CairnQ {
    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        session_ms(self, &params.worker_id, params.lease_ms)?.claim(params.draws.clone(), params.budgets.clone()).await
    }

    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        session_ms(self, &params.worker_id, params.lease_ms)?.heartbeat(&params.task_id).await
    }

    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        session_ms(self, &params.worker_id, params.lease_ms)?.heartbeat_batch(params.task_ids.clone()).await
    }

    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        let session = session_ms(self, &params.worker_id, SETTLE_LEASE_MS)?;
        session.progress(&params.task_id, params.progress, params.message.as_deref()).await
    }

    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        session_ms(self, &params.worker_id, SETTLE_LEASE_MS)?.succeed(&params.task_id, params.result.clone()).await
    }

    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        session_ms(self, &params.worker_id, SETTLE_LEASE_MS)?.complete(&params.task_id, params.result.clone()).await
    }

    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        session_ms(self, &params.worker_id, SETTLE_LEASE_MS)?.complete_batch(params.completions.clone()).await
    }

    async fn fail(&self, params: &FailParams) -> Result<Task> {
        let session = session_ms(self, &params.worker_id, SETTLE_LEASE_MS)?;
        let delay = u64::try_from(params.delay_ms)
            .map_err(|_| Error::validation("delay_ms", format!("{} ms is negative", params.delay_ms)))?;
        let retry_after = params.retryable.then_some(Duration::from_millis(delay));
        session.fail(&params.task_id, params.error.clone(), retry_after).await
    }
}
