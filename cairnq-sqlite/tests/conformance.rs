//! The shared conformance suite on SQLite: every built-in scenario and every
//! worker-suite test (real worker loops, real worker processes), from the
//! same code that holds Postgres and third-party backends to the protocol,
//! one fresh database file per scenario or test.

fn factory() -> cairnq_testkit::sqlite::SqliteFactory {
    cairnq_testkit::sqlite::SqliteFactory::new().expect("a temp dir for SQLite stores")
}

cairnq_testkit::conformance_tests!(factory());
