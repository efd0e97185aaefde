//! The suite must catch a backend that breaks the protocol: a store that
//! delegates everything to SQLite but carries one deliberate bug, and the
//! report must name the scenario and the step that caught it.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::Result;
use cairnq_core::model::{HeldLease, Task, TaskCount, TaskRef};
use cairnq_core::store::{
    ClaimParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ListFilter, NewTask, ProbeParams, ProgressParams,
    PurgeFilter, SettleParams, Store, TaskRow, TaskSelector,
};
use cairnq_testkit::scenario::{self, Report};
use cairnq_testkit::sqlite::SqliteFactory;
use cairnq_testkit::{BackendFactory, FreshStore};

/// The deliberate bug.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bug {
    /// `complete` finalizes with the raw `succeed`: a pending cancel no longer wins.
    CompleteIgnoresCancel,
    /// `claim` drops its names filter.
    ClaimIgnoresNames,
}

/// SQLite with one bug.
struct BrokenStore {
    inner: Arc<dyn Store>,
    bug: Bug,
}

#[async_trait]
impl Store for BrokenStore {
    fn backend(&self) -> &'static str {
        "broken"
    }
    async fn submit(&self, task: &NewTask) -> Result<Task> {
        self.inner.submit(task).await
    }
    async fn submit_many(&self, tasks: &[NewTask]) -> Result<Vec<Task>> {
        self.inner.submit_many(tasks).await
    }
    async fn get(&self, task: &TaskSelector) -> Result<Option<Task>> {
        self.inner.get(task).await
    }
    async fn get_status(&self, task: &TaskSelector) -> Result<Option<TaskRef>> {
        self.inner.get_status(task).await
    }
    async fn list(&self, params: &ListFilter) -> Result<Vec<TaskRow>> {
        self.inner.list(params).await
    }
    async fn stats(&self, queue: Option<&str>) -> Result<Vec<TaskCount>> {
        self.inner.stats(queue).await
    }
    async fn count_queued(&self, queue: &str, at_most: u64) -> Result<u64> {
        self.inner.count_queued(queue, at_most).await
    }
    async fn cancel(&self, task: &TaskSelector) -> Result<Option<Task>> {
        self.inner.cancel(task).await
    }
    async fn retry(&self, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>> {
        self.inner.retry(task, reset_attempt).await
    }
    async fn purge(&self, params: &PurgeFilter) -> Result<Vec<String>> {
        self.inner.purge(params).await
    }
    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        self.inner.claimable(params).await
    }
    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        let mut params = params.clone();
        if self.bug == Bug::ClaimIgnoresNames {
            params.draws.iter_mut().for_each(|draw| draw.names = None);
        }
        self.inner.claim(&params).await
    }
    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        self.inner.heartbeat(params).await
    }
    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        self.inner.heartbeat_batch(params).await
    }
    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        self.inner.progress(params).await
    }
    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        self.inner.succeed(params).await
    }
    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        match self.bug {
            Bug::CompleteIgnoresCancel => self.inner.succeed(params).await,
            Bug::ClaimIgnoresNames => self.inner.complete(params).await,
        }
    }
    async fn fail(&self, params: &FailParams) -> Result<Task> {
        self.inner.fail(params).await
    }
    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}

/// Fresh SQLite stores wrapped in the bug.
struct BrokenFactory {
    sqlite: SqliteFactory,
    bug: Bug,
}

#[async_trait]
impl BackendFactory for BrokenFactory {
    fn name(&self) -> &str {
        "broken"
    }
    async fn fresh(&self) -> Result<FreshStore> {
        let fresh = self.sqlite.fresh().await?;
        let store = BrokenStore { inner: fresh.store, bug: self.bug };
        Ok(FreshStore { store: Arc::new(store), locator: fresh.locator })
    }
}

/// Runs the built-in suite with `bug`; the report and the failure of `name`.
async fn caught_by(bug: Bug, name: &str) -> (Report, String) {
    let factory = BrokenFactory { sqlite: SqliteFactory::new().expect("temp dir"), bug };
    let report = scenario::run_all(&factory).await;
    let caught = report.failures().find(|o| o.name == name).unwrap_or_else(|| panic!("{name} did not fail"));
    let why = caught.failure.clone().unwrap_or_default();
    assert!(report.passed() > report.failed(), "only a few scenarios should fail: {}", report.summary());
    (report, why)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_that_ignores_cancel_is_caught() {
    let (report, why) = caught_by(Bug::CompleteIgnoresCancel, "cancel_wins_on_complete").await;
    // Fields are checked in name order, so `progress` (kept by a cancel-won
    // complete, set to 1 by succeed) is the first to differ.
    assert!(why.starts_with("steps[4] (complete): equals.progress: expected 0.4, actual 1.0"), "{why}");
    assert!(why.contains(r#""status":"succeeded""#), "the message shows the whole row: {why}");
    assert!(report.failures().any(|o| o.name == "key_replace_vs_running"), "{}", report.summary());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_ignores_names_is_caught() {
    let (report, why) = caught_by(Bug::ClaimIgnoresNames, "claim_names_empty_takes_nothing").await;
    assert!(why.starts_with("steps[1] (claim): length: expected 0, actual 1"), "{why}");
    assert!(report.failures().any(|o| o.name == "claim_names_filter"), "{}", report.summary());
}
