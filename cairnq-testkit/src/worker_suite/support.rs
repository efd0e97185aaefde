//! Helpers only the worker suite uses: quick worker options, a worker
//! running in the background, and a counter of overlapping work; the
//! general ones are [`crate::support`]'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairnq_core::{CairnQ, Json, ListFilter, Task};
use cairnq_worker::{Worker, WorkerHandle, WorkerOptions};

pub(crate) use cairnq_core::now_ms;

pub(crate) use crate::support::{count, eventually, finished, fresh, session};

/// Every task `filter` lists, page by page through cursors (each page of
/// the filter's limit); every row must decode.
pub(crate) async fn list_all(client: &CairnQ, mut filter: ListFilter) -> Vec<Task> {
    let mut rows = Vec::new();
    loop {
        let page = client.list(&filter).await.expect("list");
        assert!(page.undecodable.is_empty(), "every row decodes");
        rows.extend(page.tasks);
        match page.next {
            Some(next) => filter = filter.after(next),
            None => return rows,
        }
    }
}

/// `Some(value)` as stored JSON, to compare with a task's result.
pub(crate) fn some(value: serde_json::Value) -> Option<Json> {
    Some(Json::from(value))
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
