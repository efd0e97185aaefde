//! Schedules on a real file with the store's clock injected: the catch-up
//! policies after a ten-minute outage (the shared check in cairnq-testkit),
//! and due-ness read from the store's clock, not the host's.

use std::sync::Arc;

use cairnq_core::CairnQ;
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use cairnq_testkit::support::ManualClock;
use cairnq_testkit::worker_suite::catch_up_after_an_outage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_policies_after_an_outage_on_the_store_clock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::default());
    let options = SqliteOptions::new().clock(clock.clone());
    let store = SqliteStore::open_with(dir.path().join("q.db"), options).await.expect("open");
    catch_up_after_an_outage(&CairnQ::new(store), &clock).await;
}
