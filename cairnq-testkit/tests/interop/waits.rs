//! Waits by key across languages: a Python process waiting on a key whose
//! task a Rust process replaces ends with the new task, and the reverse.
//! Both SDKs re-resolve the key on every poll.

use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Conflict, SubmitOptions, TaskStatus, WaitOptions};
use cairnq_sqlite::SqliteStore;
use serde_json::json;

use crate::support::{finish_peer, peer, spawn_peer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_waits_by_key_on_a_task_rust_replaces() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("waits.db");
    let db = path.to_str().expect("utf-8 path");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let waiter = spawn_peer(&["wait-key", db, "report-9", "20000"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let first = client.submit("report", &json!({"v": 1})).key("report-9").await.expect("submit");
    let replace = SubmitOptions::new().key("report-9").conflict(Conflict::Replace);
    let second = client.submit("report", &json!({"v": 2})).options(replace).await.expect("replace");
    let claim = ClaimParams::new("rust", 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(5));
    assert_eq!(client.claim(&claim).await.expect("claim")[0].id, second.id, "the replaced task was canceled");
    client.complete(&SettleParams::new(&second.id, "rust").result(json!("v2 done"))).await.expect("complete");
    let seen = finish_peer(waiter);
    assert_eq!((seen["id"].as_str(), seen["status"].as_str()), (Some(second.id.as_str()), Some("succeeded")));
    assert_eq!(seen["result"], "v2 done");
    assert_ne!(first.id, second.id);
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_waits_by_key_on_a_task_python_replaces() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("waits.db");
    let db = path.to_str().expect("utf-8 path");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let waiter = {
        let client = client.clone();
        let wait = WaitOptions::new()
            .timeout(Duration::from_secs(30))
            .polling(Duration::from_millis(20), Duration::from_millis(100));
        tokio::spawn(async move { client.wait_by_key("report-7", &wait).await })
    };
    let first = peer(&["submit-keyed", db, "report", "report-7", "reuse", r#"{"v": 1}"#]);
    let second = peer(&["submit-keyed", db, "report", "report-7", "replace", r#"{"v": 2}"#]);
    assert_ne!(first["id"], second["id"]);
    peer(&["complete-key", db, "report-7", r#""v2 done by python""#]);
    let done = waiter.await.expect("the waiter task").expect("the wait ends");
    assert_eq!((done.id.as_str(), done.status), (second["id"].as_str().unwrap_or_default(), TaskStatus::Succeeded));
    assert_eq!(done.result_as::<String>().expect("a string result"), "v2 done by python");
    client.close().await.expect("close");
}
