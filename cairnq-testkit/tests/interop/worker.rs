//! Cross-language worker tests on one SQLite file: Python submits and a Rust
//! worker runs, Python reads the results (a payload as deep as Python writes
//! among them); a Rust client submits and a Python worker runs, Rust reads
//! the results.

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

/// A payload nested 400 levels deep, written by the Python SDK (serde_json
/// alone stops at 128), reaches a Rust handler typed on `Value`, and Python
/// reads the echoed result back whole. Not deeper: the peer prints a task
/// through `dataclasses.asdict`, two Python frames a level, so it reaches
/// the interpreter's recursion limit of 1,000 near 500 levels (the SDK's
/// own json reads about 1,000; the suite's
/// `a_value_handler_takes_a_payload_nested_a_thousand_levels` takes that
/// depth on every backend).
#[tokio::test(flavor = "multi_thread")]
async fn a_deep_python_payload_reaches_a_rust_value_handler() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path");
    let depth = 400;
    let payload = format!("{}\"py\"{}", "[".repeat(depth), "]".repeat(depth));
    let submitted = peer(&["submit-to", db, "default", "deep_echo", &payload]);
    let id = submitted["id"].as_str().expect("an id");

    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let options = WorkerOptions::new().poll_interval(Duration::from_millis(20));
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker
        .task("deep_echo", |_ctx: TaskContext, payload: Value| async move { Ok::<_, TaskError>(payload) })
        .expect("register");
    let handle = worker.spawn();
    wait_until_all_succeeded(&client, 1).await;
    handle.stop_and_join().await.expect("worker stops");
    client.close().await.expect("close");

    let seen = peer(&["get", db, id]);
    assert_eq!(seen["status"], "succeeded", "{}", seen["error"]);
    let expected = cairnq_core::Json::parse(payload).expect("valid").to_value().expect("decodes");
    assert!(seen["result"] == expected && seen["payload"] == expected, "the payload came back whole");
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
