//! The shared conformance suite on Postgres: every built-in scenario and
//! every worker-suite test (real worker loops, real worker processes), from
//! the same code that holds SQLite and third-party backends to the protocol,
//! one fresh schema per scenario or test on the test server
//! (`CAIRNQ_TEST_PG_DSN`, else the throwaway cluster the testkit starts).

fn factory() -> cairnq_testkit::postgres::PostgresFactory {
    cairnq_testkit::postgres::PostgresFactory::from_test_server().expect("a Postgres test server")
}

cairnq_testkit::conformance_tests!(factory());
