//! The suite must catch a backend that breaks the protocol: a store that
//! delegates everything to SQLite but finalizes `complete` with the raw
//! `succeed`, so a pending cancel no longer wins.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::Result;
use cairnq_core::model::{HeldLease, Task, TaskCount, TaskRef};
use cairnq_core::store::{
    ClaimParams, FailParams, HeartbeatBatchParams, HeartbeatParams, ListParams, NewTask, ProbeParams, ProgressParams,
    PurgeParams, SettleParams, Store, TaskSelector,
};
use cairnq_testkit::sqlite::SqliteFactory;
use cairnq_testkit::{BackendFactory, FreshStore, scenario};

/// SQLite with one bug: `complete` ignores a pending cancel.
struct CancelBlindStore(Arc<dyn Store>);

#[async_trait]
impl Store for CancelBlindStore {
    fn backend(&self) -> &'static str {
        "cancel-blind"
    }
    async fn submit(&self, task: &NewTask) -> Result<Task> {
        self.0.submit(task).await
    }
    async fn submit_many(&self, tasks: &[NewTask]) -> Result<Vec<Task>> {
        self.0.submit_many(tasks).await
    }
    async fn get(&self, task: &TaskSelector) -> Result<Option<Task>> {
        self.0.get(task).await
    }
    async fn get_status(&self, task: &TaskSelector) -> Result<Option<TaskRef>> {
        self.0.get_status(task).await
    }
    async fn list(&self, params: &ListParams) -> Result<Vec<Task>> {
        self.0.list(params).await
    }
    async fn stats(&self, queue: Option<&str>) -> Result<Vec<TaskCount>> {
        self.0.stats(queue).await
    }
    async fn count_queued(&self, queue: &str, at_most: u64) -> Result<u64> {
        self.0.count_queued(queue, at_most).await
    }
    async fn cancel(&self, task: &TaskSelector) -> Result<Option<Task>> {
        self.0.cancel(task).await
    }
    async fn retry(&self, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>> {
        self.0.retry(task, reset_attempt).await
    }
    async fn purge(&self, params: &PurgeParams) -> Result<Vec<String>> {
        self.0.purge(params).await
    }
    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        self.0.claimable(params).await
    }
    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        self.0.claim(params).await
    }
    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        self.0.heartbeat(params).await
    }
    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        self.0.heartbeat_batch(params).await
    }
    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        self.0.progress(params).await
    }
    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        self.0.succeed(params).await
    }
    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        // The bug under test: the raw primitive, blind to a pending cancel.
        self.0.succeed(params).await
    }
    async fn fail(&self, params: &FailParams) -> Result<Task> {
        self.0.fail(params).await
    }
    async fn close(&self) -> Result<()> {
        self.0.close().await
    }
}

/// Fresh SQLite stores wrapped in the bug.
struct CancelBlindFactory(SqliteFactory);

#[async_trait]
impl BackendFactory for CancelBlindFactory {
    fn name(&self) -> &str {
        "cancel-blind"
    }
    async fn fresh(&self) -> Result<FreshStore> {
        let fresh = self.0.fresh().await?;
        Ok(FreshStore { store: Arc::new(CancelBlindStore(fresh.store)), locator: fresh.locator })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_names_the_scenario_and_step_a_broken_store_fails() {
    let factory = CancelBlindFactory(SqliteFactory::new().expect("temp dir"));
    let report = scenario::run_all(&factory).await;
    let caught =
        report.failures().find(|o| o.name == "cancel_wins_on_complete").expect("cancel_wins_on_complete fails");
    let why = caught.failure.as_deref().unwrap_or_default();
    // Fields are checked in name order, so `progress` (kept by a cancel-won
    // complete, set to 1 by succeed) is the first to differ.
    assert!(why.starts_with("steps[4] (complete): equals.progress: expected 0.4, actual 1.0"), "{why}");
    assert!(why.contains(r#""status":"succeeded""#), "the message shows the whole row: {why}");
    assert!(report.failures().any(|o| o.name == "key_replace_vs_running"), "{}", report.summary());
    assert!(report.passed() > report.failed(), "only the cancel paths should fail: {}", report.summary());
}
