//! Shared setup: the server, a fresh schema per test, raw SQL access.

use cairnq_core::CairnQ;
use cairnq_postgres::PostgresStore;
use cairnq_testkit::postgres::{fresh_schema_name, test_dsn};

pub(crate) use cairnq_testkit::postgres::raw;

/// The test server's superuser DSN.
pub(crate) fn dsn() -> String {
    test_dsn().expect("a test Postgres server (set CAIRNQ_TEST_PG_DSN or install Postgres)")
}

/// A store in a schema of its own, and that schema's name.
pub(crate) async fn fresh() -> (PostgresStore, String) {
    let schema = fresh_schema_name();
    let store = cairnq_testkit::postgres::open(&dsn(), &schema).await.expect("connect to the test server");
    (store, schema)
}

/// A client over a fresh store, the store, and its schema.
pub(crate) async fn fresh_client() -> (CairnQ, PostgresStore, String) {
    let (store, schema) = fresh().await;
    (CairnQ::new(store.clone()), store, schema)
}

/// One bigint from a query.
pub(crate) async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}
