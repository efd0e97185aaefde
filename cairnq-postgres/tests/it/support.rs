//! Shared setup: the server, a fresh schema per test, raw SQL access.

use cairnq_core::CairnQ;
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{dsn_with_user, fresh_schema_name, test_dsn};

/// The test server's superuser DSN.
pub(crate) fn dsn() -> String {
    test_dsn().expect("a test Postgres server (set CAIRNQ_TEST_PG_DSN or install Postgres)")
}

/// A DSN for another role of the test cluster (see scripts/pg-test-server.sh).
pub(crate) fn dsn_as(user_and_password: &str) -> String {
    dsn_with_user(&dsn(), user_and_password)
}

/// A store in a schema of its own, and that schema's name.
pub(crate) async fn fresh() -> (PostgresStore, String) {
    let schema = fresh_schema_name();
    let store = PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(&schema).pool_size(4))
        .await
        .expect("connect to the test server");
    (store, schema)
}

/// A client over a fresh store, the store, and its schema.
pub(crate) async fn fresh_client() -> (CairnQ, PostgresStore, String) {
    let (store, schema) = fresh().await;
    (CairnQ::new(store.clone()), store, schema)
}

/// A plain tokio-postgres connection (the application's own session).
pub(crate) async fn raw(dsn: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(dsn, tokio_postgres::NoTls).await.expect("raw connect");
    tokio::spawn(connection);
    client
}

/// One bigint from a query.
pub(crate) async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}
