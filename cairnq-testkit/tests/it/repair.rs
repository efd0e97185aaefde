//! A worker repairs, at start, rows of its queues that no operation would
//! move: a running row another writer left without a lease is recovered
//! like an expired lease, run, and the repair is reported by id.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::support::finished;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_recovers_a_running_row_without_a_lease_and_reports_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("repair.db");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let id = cairnq_core::backend::new_task_id();
    rusqlite::Connection::open(&path)
        .expect("open raw")
        .execute(
            "insert into cairnq_tasks (id, name, queue, status, payload, attempt, worker_id, run_at_ms, root_id, created_at_ms, updated_at_ms)
             values (?1, 'job', 'default', 'running', '{}', 1, 'worker_gone', 0, ?1, 0, 0)",
            [&id],
        )
        .expect("a running row without a lease");

    let reported: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = reported.clone();
    let options = WorkerOptions::new().poll_interval(Duration::from_millis(20)).on_error(move |issue| {
        if let WorkerIssue::Repaired { repaired } = issue {
            sink.lock().expect("lock").extend(repaired.expired);
        }
    });
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker
        .task("job", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(json!("ran")) })
        .expect("register");
    let handle = worker.spawn();
    let done = finished(&client, &id).await;
    handle.stop_and_join().await.expect("worker stops");
    assert_eq!((done.status, done.attempt), (TaskStatus::Succeeded, 2), "recovered as an expired lease: a new attempt");
    assert_eq!(*reported.lock().expect("lock"), vec![id], "the repair is reported by id");
}
