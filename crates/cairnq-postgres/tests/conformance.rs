//! The shared conformance suite on Postgres: every built-in scenario, from
//! the same code that holds SQLite to the protocol, one fresh schema per
//! scenario. (The worker suite runs on Postgres from cairnq-worker's
//! `tests/suite.rs`, through the same `PostgresFactory`.)

use cairnq_testkit::postgres::PostgresFactory;
use cairnq_testkit::scenario::{self, builtin_scenarios};

fn factory() -> PostgresFactory {
    PostgresFactory::from_test_server().expect("a test Postgres server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_scenario_passes_on_postgres() {
    let report = scenario::run_all(&factory()).await;
    assert_eq!(report.outcomes.len(), builtin_scenarios().len());
    report.assert_all_passed();
}
