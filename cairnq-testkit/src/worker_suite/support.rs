//! Helpers the worker tests share: a fresh client from the factory, a
//! worker running in the background, waiting for tasks, and a counter of
//! overlapping work.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairnq_core::{CairnQ, Json, Task, TaskStatus, WaitOptions};
use cairnq_worker::{Worker, WorkerHandle, WorkerOptions};

use crate::{BackendFactory, FreshStore};

/// `Some(value)` as stored JSON, to compare with a task's result.
pub(crate) fn some(value: serde_json::Value) -> Option<Json> {
    Some(Json::from(value))
}

/// A fresh store and a client over it.
pub(crate) async fn fresh(factory: &dyn BackendFactory) -> (CairnQ, FreshStore) {
    let fresh = factory.fresh().await.expect("the factory makes a fresh store");
    (CairnQ::from_shared(fresh.store.clone()), fresh)
}

/// Worker options for tests: quick polls and retries, and a lease short
/// enough for expiry tests yet long enough for a loaded 2-core machine.
pub(crate) fn quick_options() -> WorkerOptions {
    WorkerOptions::new()
        .lease(Duration::from_millis(2_000))
        .poll_interval(Duration::from_millis(25))
        .backoff(Duration::ZERO, Duration::ZERO)
        .drain_timeout(Duration::from_secs(5))
}

/// A worker over `client` with handlers registered by `register`, running
/// in the background until the handle is dropped.
pub(crate) fn start(client: &CairnQ, options: WorkerOptions, register: impl FnOnce(&mut Worker)) -> WorkerHandle {
    let mut worker = Worker::new(client.clone(), options).expect("valid worker options");
    register(&mut worker);
    worker.spawn()
}

/// Waits until the task is terminal (15 s at most) and returns its row.
pub(crate) async fn finished(client: &CairnQ, task_id: &str) -> Task {
    let wait = WaitOptions::new()
        .timeout(Duration::from_secs(15))
        .polling(Duration::from_millis(10), Duration::from_millis(50));
    client.wait(task_id, &wait).await.expect("the task finishes in time")
}

/// Polls `probe` every 10 ms until it is true (15 s at most).
pub(crate) async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !probe().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many rows of `status` the client sees.
pub(crate) async fn count(client: &CairnQ, status: TaskStatus) -> u64 {
    let stats = client.stats(None).await.expect("stats");
    stats.values().map(|c| c.get(status)).sum()
}

/// Epoch milliseconds now.
pub(crate) fn now_ms() -> i64 {
    use cairnq_core::Clock;
    cairnq_core::SystemClock.now_ms()
}

/// Tracks how much of something is held at once and the peak.
#[derive(Debug, Default)]
pub(crate) struct Gauge {
    now: AtomicU64,
    peak: AtomicU64,
}

impl Gauge {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn add(&self, n: u64) {
        let now = self.now.fetch_add(n, Ordering::SeqCst) + n;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }

    pub(crate) fn sub(&self, n: u64) {
        self.now.fetch_sub(n, Ordering::SeqCst);
    }

    pub(crate) fn current(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::SeqCst)
    }
}
