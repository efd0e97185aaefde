//! The schedules extension seen from the Python SDK: a file holding
//! `cairnq_schedules` and its ledger row opens in Python, which submits and
//! claims as before, and a Python worker runs a task a Rust schedule fired
//! (an ordinary keyed task).

use std::time::Duration;

use cairnq_core::{CairnQ, Schedule, TaskStatus, slot_key};
use cairnq_sqlite::SqliteStore;
use serde_json::{Value, json};

use crate::support::peer;

#[tokio::test(flavor = "multi_thread")]
async fn python_works_on_a_database_with_schedules_and_runs_a_fired_task() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("scheduled.db");
    let db = path.to_str().expect("utf-8 path");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let every = Schedule::every("py", Duration::from_secs(1), "scheduled_py").expect("valid");
    client.save_schedule(&every.payload(&json!({"from": "schedule"})).expect("json")).await.expect("save");
    let fired = fire_one(&client).await;
    client.close().await.expect("close");

    let schema = peer(&["schema", db]);
    let tables: Vec<&str> =
        schema["objects"].as_array().expect("objects").iter().filter_map(|o| o[2].as_str()).collect();
    assert!(tables.contains(&"cairnq_schedules"), "the file holds the extension table: {tables:?}");
    let submitted = peer(&["submit", db, "py_job", r#"{"n":1}"#]);
    let claimed = peer(&["claim-complete", db, "py_job", r#"{"ok":true}"#]);
    assert_eq!(claimed["claimed"]["id"], submitted["id"], "Python claims as before");
    assert_eq!(claimed["completed"]["status"], "succeeded");

    let ran = peer(&["worker", db, "scheduled_py", "2"]);
    assert_eq!(ran["terminal"], 2, "the Python job and the fired task");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("reopen"));
    let done = client.get(&fired.0).await.expect("get").expect("exists");
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"echo": {"from": "schedule"}, "by": "python"}).into()));
    let by_key = client.get_by_key(&slot_key("py", fired.1)).await.expect("by key").map(|t| t.id);
    assert_eq!(by_key, Some(fired.0));
    client.close().await.expect("close");
}

/// Fires until a slot of the schedule fired: (task id, slot ms).
async fn fire_one(client: &CairnQ) -> (String, i64) {
    for _ in 0..100 {
        if let Some(task) = client.fire_due_schedules().await.expect("fire").fired.into_iter().next() {
            let meta: Value = task.metadata.to_value().expect("json");
            return (task.id, meta["schedule_slot_ms"].as_i64().expect("slot"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the schedule never fired");
}
