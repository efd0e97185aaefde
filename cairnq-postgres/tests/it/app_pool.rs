//! `PostgresStore::from_pool`: cairnq on the application's own deadpool
//! pool, with push wakeups only through a LISTEN DSN of its own.

use std::future::IntoFuture;
use std::time::Duration;

use cairnq_core::{CairnQ, ErrorKind, Store, Wake};
use cairnq_postgres::deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::fresh_schema_name;
use cairnq_testkit::support::eventually;
use serde_json::json;

use crate::support::{count, dsn, raw};

/// The application's pool of `size` connections, whose search_path starts
/// with `schema`.
pub(crate) fn app_pool(schema: &str, size: usize) -> Pool {
    let config: tokio_postgres::Config = dsn_on_path(schema).parse().expect("dsn");
    let manager =
        Manager::from_config(config, tokio_postgres::NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager).max_size(size).runtime(Runtime::Tokio1).build().expect("pool")
}

/// The test server's DSN with `schema` first on the search_path.
pub(crate) fn dsn_on_path(schema: &str) -> String {
    let dsn = dsn();
    let separator = if dsn.contains('?') { '&' } else { '?' };
    format!("{dsn}{separator}options=-csearch_path%3D{schema}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_on_the_applications_pool_uses_only_that_pool() {
    let schema = fresh_schema_name();
    let pool = app_pool(&schema, 2);
    let store =
        PostgresStore::from_pool(pool.clone(), PostgresOptions::new().schema(&schema)).await.expect("from_pool");
    assert_eq!(store.schema(), Some(schema.as_str()));
    assert!(!store.capabilities().push_wakeups, "no LISTEN DSN: the store polls");
    let client = CairnQ::new(store.clone());

    let submits = (0..20).map(|i| client.submit("resize", &json!({ "i": i })).into_future());
    for submitted in futures::future::join_all(submits).await {
        submitted.expect("submit through the application's pool");
    }
    let status = pool.status();
    assert!(status.size <= 2, "cairnq stayed within the application's pool: {status:?}");
    let admin = raw(&dsn()).await;
    assert_eq!(count(&admin, &format!("select count(*) from {schema}.cairnq_tasks")).await, 20, "in the schema");

    store.close().await.expect("close");
    let app = pool.get().await.expect("the application's pool stays open");
    assert_eq!(count(&app, "select count(*) from cairnq_tasks").await, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_dsn_brings_push_wakeups() {
    let schema = fresh_schema_name();
    let options = PostgresOptions::new().schema(&schema).listen_dsn(dsn_on_path(&schema));
    let store = PostgresStore::from_pool(app_pool(&schema, 2), options).await.expect("from_pool");
    assert!(store.capabilities().push_wakeups);
    eventually("the LISTEN connection is up", || async { store.listening() }).await;

    let woken = store.notifications().watch(&Wake::Queued(vec!["default".into()]));
    CairnQ::new(store.clone()).submit("resize", &json!({})).await.expect("submit");
    tokio::time::timeout(Duration::from_secs(30), woken).await.expect("the submit's NOTIFY woke the watch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_resolving_another_schema_is_refused_before_writing() {
    let (wanted, elsewhere) = (fresh_schema_name(), fresh_schema_name());
    let admin = raw(&dsn()).await;
    admin.batch_execute(&format!("create schema {elsewhere}")).await.expect("schema");

    let err = PostgresStore::from_pool(app_pool(&elsewhere, 1), PostgresOptions::new().schema(&wanted))
        .await
        .expect_err("the pool resolves names elsewhere");
    assert_eq!(err.kind(), ErrorKind::ValidationError, "{err}");
    assert!(err.to_string().contains("search_path"), "names the fix: {err}");
    let created = count(&admin, &format!("select count(*) from pg_namespace where nspname = '{wanted}'")).await;
    assert_eq!(created, 0, "the schema was not created");
    let tables = format!("select count(*) from pg_tables where schemaname = '{elsewhere}'");
    assert_eq!(count(&admin, &tables).await, 0, "nothing was installed where the pool points");
}
