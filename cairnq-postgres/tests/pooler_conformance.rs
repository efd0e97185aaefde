//! The shared conformance suite in pooler mode (`PostgresOptions::pooler`)
//! through a real PgBouncer in transaction mode (`cairnq_testkit`'s
//! `TestPooler`, whose server pool is 10 connections): every built-in
//! scenario and the worker-suite tests that run in this process (those
//! that need a child process skip: a child would not connect in pooler
//! mode), with LISTEN on a direct connection (`listen_dsn`), the deployment
//! the book recommends. Without `pgbouncer` installed, pooler mode straight
//! to Postgres.

fn factory() -> cairnq_testkit::postgres::PostgresFactory {
    cairnq_testkit::postgres::PostgresFactory::through_test_pooler().expect("a Postgres test server")
}

cairnq_testkit::conformance_tests!(factory());
