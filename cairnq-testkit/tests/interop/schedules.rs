//! The schedules extension seen from the Python SDK, on SQLite and on
//! Postgres: a database holding `cairnq_ext_schedules` and its ledger row opens
//! in Python, which submits and claims as before, and a Python worker runs a
//! task a Rust schedule fired (an ordinary keyed task).

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
    let fired = schedule_and_fire(&client).await;
    client.close().await.expect("close");

    let schema = peer(&["schema", db]);
    let tables: Vec<&str> =
        schema["objects"].as_array().expect("objects").iter().filter_map(|o| o[2].as_str()).collect();
    assert!(tables.contains(&"cairnq_ext_schedules"), "the file holds the extension table: {tables:?}");
    python_works_as_before(db);
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("reopen"));
    assert_ran_by_python(&client, fired).await;
    client.close().await.expect("close");
}

/// The same on a Postgres schema, both sides connected at once.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_works_on_a_postgres_schema_with_schedules_and_runs_a_fired_task() {
    use crate::postgres::{dsn, rust_store, with_schema};
    let (dsn, schema) = (dsn(), cairnq_testkit::postgres::fresh_schema_name());
    let client = CairnQ::new(rust_store(&dsn, &schema).await);
    let fired = schedule_and_fire(&client).await;
    let table = format!("{schema}.cairnq_ext_schedules");
    let found = cairnq_testkit::postgres::raw(&dsn).await.query_one("select to_regclass($1)::text", &[&table]).await;
    let found: Option<String> = found.expect("look the table up").get(0);
    assert_eq!(found.as_deref(), Some(table.as_str()), "the schema holds the extension table");
    python_works_as_before(&with_schema(&dsn, &schema));
    assert_ran_by_python(&client, fired).await;
    client.close().await.expect("close");
}

/// Saves `py` (`@every 1s`, task `scheduled_py`) and fires one of its
/// slots: (task id, slot ms).
pub(crate) async fn schedule_and_fire(client: &CairnQ) -> (String, i64) {
    let every = Schedule::every("py", Duration::from_secs(1), "scheduled_py").expect("valid");
    client.save_schedule(&every.payload(&json!({"from": "schedule"})).expect("json")).await.expect("save");
    for _ in 0..100 {
        if let Some(task) = client.fire_due_schedules().await.expect("fire").fired.into_iter().next() {
            let meta: Value = task.metadata.to_value().expect("json");
            return (task.id, meta["schedule_slot_ms"].as_i64().expect("slot"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the schedule never fired");
}

/// On `db` (the peer's spelling), Python submits and claims as before, and
/// its worker runs the fired task beside its own job.
pub(crate) fn python_works_as_before(db: &str) {
    let submitted = peer(&["submit", db, "py_job", r#"{"n":1}"#]);
    let claimed = peer(&["claim-complete", db, "py_job", r#"{"ok":true}"#]);
    assert_eq!(claimed["claimed"]["id"], submitted["id"], "Python claims as before");
    assert_eq!(claimed["completed"]["status"], "succeeded");
    let ran = peer(&["worker", db, "scheduled_py", "2"]);
    assert_eq!(ran["terminal"], 2, "the Python job and the fired task");
}

/// The fired task (id, slot) succeeded with the Python worker's result and
/// is still the task its slot key names.
pub(crate) async fn assert_ran_by_python(client: &CairnQ, (id, slot): (String, i64)) {
    let done = client.get(&id).await.expect("get").expect("exists");
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"echo": {"from": "schedule"}, "by": "python"}).into()));
    let by_key = client.get_by_key(&slot_key("py", slot)).await.expect("by key").map(|t| t.id);
    assert_eq!(by_key, Some(id));
}

/// A database the Python SDK created, opened as it is (`Install::Existing`:
/// this SDK's extension migrations not applied, as a team running its own
/// migration tool may leave it): a Rust worker still runs Python's tasks,
/// and says once that it fires no schedules there, instead of failing its
/// due check every second or stopping.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_on_a_database_without_the_schedules_table_keeps_working() {
    use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("python.db");
    let db = path.to_str().expect("utf-8 path");
    let submitted = peer(&["submit", db, "py_job", r#"{"n":1}"#]);
    let options = cairnq_sqlite::SqliteOptions::new().install(cairnq_core::Install::Existing);
    let client = CairnQ::new(SqliteStore::open_with(&path, options).await.expect("open as it is"));
    let issues = Arc::new(Mutex::new(Vec::new()));
    let seen = issues.clone();
    let options = WorkerOptions::new()
        .poll_interval(Duration::from_millis(20))
        .schedules_every(Some(Duration::from_millis(50)))
        .on_error(move |issue: WorkerIssue| seen.lock().expect("lock").push(issue.to_string()));
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker
        .task("py_job", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(json!("done")) })
        .expect("register");
    let handle = worker.spawn();
    let id = submitted["id"].as_str().expect("id").to_string();
    for _ in 0..500 {
        if client.get(&id).await.expect("get").is_some_and(|t| t.status == TaskStatus::Succeeded) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.stop_and_join().await.expect("the worker ran on and stopped cleanly");
    assert_eq!(client.get(&id).await.expect("get").map(|t| t.status), Some(TaskStatus::Succeeded));
    let issues = issues.lock().expect("lock").clone();
    assert_eq!(issues.len(), 1, "one report, not one per due check: {issues:?}");
    assert!(issues[0].contains("fires no schedules") && issues[0].contains("cairnq migrate"), "{issues:?}");
}
