//! Helpers every test crate of the workspace shares, written once: a
//! fresh client from a factory, waiting until something holds or a task
//! ends, counting rows by status, the clock.
//!
//! They panic on failure, as test code does.

use std::future::Future;
use std::time::Duration;

use cairnq_core::{CairnQ, Task, TaskStatus, WaitOptions};

use crate::{BackendFactory, FreshStore};

/// How long [`eventually`] and [`finished`] wait: far longer than anything
/// they wait for takes on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A fresh store from `factory` and a client over it.
pub async fn fresh(factory: &dyn BackendFactory) -> (CairnQ, FreshStore) {
    let fresh = factory.fresh().await.expect("the factory makes a fresh store");
    (CairnQ::from_shared(fresh.store.clone()), fresh)
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
