//! The suite must catch a backend that breaks the protocol: a store that
//! delegates everything to SQLite but carries one deliberate bug, and the
//! report must name the scenario and the step that caught it.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::store::{ClaimParams, SettleParams, Store};
use cairnq_core::{Result, Task};
use cairnq_testkit::forwarding::{Forward, Forwarding};
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
impl Forward for BrokenStore {
    fn inner(&self) -> &dyn Store {
        self.inner.as_ref()
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        let mut params = params.clone();
        if self.bug == Bug::ClaimIgnoresNames {
            params.draws.iter_mut().for_each(|draw| draw.names = None);
        }
        self.inner.claim(&params).await
    }

    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        match self.bug {
            Bug::CompleteIgnoresCancel => self.inner.succeed(params).await,
            Bug::ClaimIgnoresNames => self.inner.complete(params).await,
        }
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
        let store = Forwarding(BrokenStore { inner: fresh.store, bug: self.bug });
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
