//! The shared conformance suite on the in-memory reference backend: every
//! built-in scenario and every worker-suite test, from the same code that
//! holds SQLite, Postgres and third-party backends to the protocol, one
//! fresh `MemoryStore` per scenario or test. The tests that need a second
//! process to open the same store skip themselves with a message: a memory
//! store lives in one process only.

cairnq_testkit::conformance_tests!(cairnq_testkit::memory::MemoryFactory::new());

/// The catch-up policies after a ten-minute outage, on a clock the test moves.
#[tokio::test]
async fn catch_up_policies_after_an_outage() {
    let clock = std::sync::Arc::new(cairnq_testkit::support::ManualClock::default());
    let client = cairnq_core::CairnQ::new(cairnq_testkit::memory::MemoryStore::with_clock(clock.clone()));
    cairnq_testkit::worker_suite::catch_up_after_an_outage(&client, &clock).await;
}
