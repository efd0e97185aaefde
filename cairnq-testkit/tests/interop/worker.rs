//! Cross-language worker tests on one SQLite file: Python submits and a Rust
//! worker runs, Python reads the results; a Rust client submits and a Python
//! worker runs, Rust reads the results.

use std::time::Duration;

use crate::support::peer;
use cairnq_core::{CairnQ, TaskSpec, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

const TASKS: usize = 20;

#[tokio::test(flavor = "multi_thread")]
async fn python_submits_a_rust_worker_runs_python_reads_the_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path");
    let ids = peer(&["submit-many", db, "py_to_rs", &TASKS.to_string()]);
    let ids: Vec<&str> = ids.as_array().expect("ids").iter().filter_map(Value::as_str).collect();
    assert_eq!(ids.len(), TASKS);

    let store = SqliteStore::open(&path).await.expect("open");
    let client = CairnQ::new(store);
    let options = WorkerOptions::new().concurrency(4).poll_interval(Duration::from_millis(20));
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker
        .task("py_to_rs", |ctx: TaskContext, payload: Value| async move {
            Ok::<_, TaskError>(json!({"doubled": payload["n"].as_i64().unwrap_or(-1) * 2, "attempt": ctx.attempt()}))
        })
        .expect("register");
    let handle = worker.spawn();
    wait_until_all_succeeded(&client, TASKS).await;
    handle.stop_and_join().await.expect("worker stops");
    client.close().await.expect("close");

    for id in ids {
        let seen = peer(&["get", db, id]);
        assert_eq!(seen["status"], "succeeded", "{seen}");
        let n = seen["payload"]["n"].as_i64().expect("payload n");
        assert_eq!(seen["result"], json!({"doubled": n * 2, "attempt": 1}));
        assert_eq!(seen["payload"]["text"], "héllo");
        assert!(seen["worker_id"].as_str().is_some_and(|w| w.starts_with("worker_")));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_submits_a_python_worker_runs_rust_reads_the_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let specs: Vec<TaskSpec> =
        (0..TASKS).map(|i| TaskSpec::new("rs_to_py", &json!({"i": i, "deep": {"ü": [i, 0.5]}}))).collect();
    let submitted = client.submit_many(&specs).await.expect("submit_many");

    let ran = peer(&["worker", path.to_str().expect("utf-8 path"), "rs_to_py", &TASKS.to_string()]);
    assert_eq!(ran["terminal"], TASKS);

    for task in submitted {
        let done = client.get(&task.id).await.expect("get").expect("exists");
        assert_eq!(done.status, TaskStatus::Succeeded);
        assert_eq!(done.result, Some(json!({"echo": task.payload, "by": "python"}).into()));
        assert_eq!(done.attempt, 1);
        assert_eq!(done.lease_until_ms, None);
    }
    client.close().await.expect("close");
}

async fn wait_until_all_succeeded(client: &CairnQ, expected: usize) {
    for _ in 0..1500 {
        let stats = client.stats(Some("default")).await.expect("stats");
        if stats["default"].succeeded as usize == expected {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the Rust worker did not finish the Python tasks: {:?}", client.stats(None).await);
}
