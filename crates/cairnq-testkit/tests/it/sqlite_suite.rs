//! Our whole built-in scenario suite against the SQLite backend, one fresh
//! database file per scenario.

use cairnq_testkit::scenario::{self, builtin_scenarios};
use cairnq_testkit::sqlite::SqliteFactory;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_scenario_passes_on_sqlite() {
    let factory = SqliteFactory::new().expect("temp dir");
    let report = scenario::run_all(&factory).await;
    assert_eq!(report.outcomes.len(), builtin_scenarios().len());
    report.assert_all_passed();
}
