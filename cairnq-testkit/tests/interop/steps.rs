//! Durable steps (`ext_0009_steps`) beside the Python SDK, which knows
//! nothing of them: it opens a database holding the steps table and
//! submits, claims and settles as before, and its purge deletes the steps
//! of the tasks it purges (the table's foreign key cascades on its
//! connection too: PROTOCOL.md has every SDK's SQLite turn foreign keys on).

use std::future::Future;
use std::time::Duration;

use cairnq_core::{CairnQ, TaskStatus, WaitOptions};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

use crate::support::peer;

async fn steps_beside_the_peer<F, Fut>(db: &str, open: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = CairnQ>,
{
    let client = open().await;
    let options = WorkerOptions::new().poll_interval(Duration::from_millis(25)).backoff(Duration::ZERO, Duration::ZERO);
    let mut worker = Worker::new(client.clone(), options).expect("worker options");
    worker
        .task("stepped", |ctx: TaskContext, _: Value| async move {
            let a: u32 = ctx.step("a", || async { Ok::<_, TaskError>(1) }).await?;
            let b: u32 = ctx.step("b", || async { Ok::<_, TaskError>(2) }).await?;
            Ok::<_, TaskError>(a + b)
        })
        .expect("register");
    let running = worker.spawn();

    // A task the peer submitted, run by our worker with two steps.
    let submitted = peer(&["submit", db, "stepped", "{}"]);
    let id = submitted["id"].as_str().expect("the peer's task id").to_string();
    let wait = WaitOptions::new().timeout(Duration::from_secs(30));
    let done = client.wait(&id, &wait).await.expect("our worker runs it");
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
    assert_eq!(client.steps(&id).await.expect("steps").len(), 2);
    running.stop_and_join().await.expect("the worker stops");

    // The peer still submits, claims and settles its own work here.
    peer(&["submit", db, "py_job", "{}"]);
    let settled = peer(&["claim-complete", db, "py_job", r#"{"ok": true}"#]);
    assert_eq!(settled["completed"]["status"], Value::from("succeeded"), "{settled}");

    // The peer's purge takes our task's steps with it.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let purged = peer(&["purge", db]);
    assert!(purged.as_array().is_some_and(|ids| ids.contains(&json!(id))), "{purged}");
    assert!(client.steps(&id).await.expect("steps").is_empty(), "the steps went with the task");
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_steps_beside_the_python_sdk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path").to_string();
    steps_beside_the_peer(&db, || async {
        CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open sqlite"))
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_steps_beside_the_python_sdk() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let db = format!("{dsn}#schema={schema}");
    steps_beside_the_peer(&db, || async {
        let options = PostgresOptions::new().schema(&schema).listen(false);
        CairnQ::new(PostgresStore::connect_with(&dsn, options).await.expect("connect"))
    })
    .await;
}
