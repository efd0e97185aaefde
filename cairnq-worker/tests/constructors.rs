//! The backend constructors of `Worker` hand their store options to the
//! store they open: each test sets an option whose effect the store shows,
//! and finds it.

use std::sync::Arc;

use cairnq_core::{Clock, Install};
use cairnq_postgres::PostgresOptions;
use cairnq_sqlite::SqliteOptions;
use cairnq_testkit::postgres::{fresh_schema_name, raw, test_dsn};
use cairnq_worker::{Worker, WorkerOptions};
use serde_json::json;

/// A clock stopped at one instant, so the store's timestamps name it.
struct Stopped(i64);

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        self.0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_with_opens_the_store_with_its_options() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.db");
    let existing_only = SqliteOptions::new().install(Install::Existing);
    let refused = Worker::sqlite_with(&missing, existing_only, WorkerOptions::new()).await.err();
    assert!(refused.is_some(), "Install::Existing reached the store: a missing file is not created");
    assert!(!missing.exists(), "nothing was created");

    let at = 1_234_567_890_123;
    let options = SqliteOptions::new().clock(Arc::new(Stopped(at)));
    let worker = Worker::sqlite_with(dir.path().join("q.db"), options, WorkerOptions::new()).await.expect("open");
    let task = worker.client().submit("job", &json!({})).await.expect("submit");
    assert_eq!((task.created_at_ms, task.run_at_ms), (at, at), "the store runs on the given clock");
    worker.client().close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_with_opens_the_store_with_its_options() {
    let dsn = test_dsn().expect("a test Postgres server");
    let schema = fresh_schema_name();
    let options = PostgresOptions::new().schema(&schema).listen(false);
    let worker = Worker::postgres_with(&dsn, options, WorkerOptions::new()).await.expect("connect");
    let task = worker.client().submit("job", &json!({})).await.expect("submit");
    let sql = format!("select count(*) from {schema}.cairnq_tasks where id = $1");
    let rows: i64 = raw(&dsn).await.query_one(&sql, &[&task.id]).await.expect("read the schema").get(0);
    assert_eq!(rows, 1, "the task was written in the schema the options name");
    worker.client().close().await.expect("close");

    let missing = fresh_schema_name();
    let existing_only = PostgresOptions::new().schema(&missing).listen(false).install(Install::Existing);
    let refused = Worker::postgres_with(&dsn, existing_only, WorkerOptions::new()).await.err();
    assert!(refused.is_some(), "Install::Existing reached the store: a missing installation is refused");
    let sql = "select count(*) from pg_namespace where nspname = $1";
    let created: i64 = raw(&dsn).await.query_one(sql, &[&missing]).await.expect("read the catalog").get(0);
    assert_eq!(created, 0, "nothing was created");
}
