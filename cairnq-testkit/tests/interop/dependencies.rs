//! Task dependencies (`ext_0008_task_dependencies`) with only Python
//! workers running: cairnq-rs submits a diamond (A; B and C after A; D
//! after B and C) and a failing pair, closes its store, and the Python SDK
//! 0.15.1, which knows nothing of dependencies, runs every task. The
//! release is the migration's trigger, fired by the Python worker's own
//! settles: every task runs after its dependencies ended, D succeeds, and a
//! failed dependency cancels its dependent with the envelope. The peer also
//! reads every row (list, get, stats) while some still wait.

use std::future::Future;

use cairnq_core::{CairnQ, ErrorEnvelope, Task, TaskStatus, is_waiting};
use serde_json::{Value, json};

use crate::support::peer;

/// The diamond and the failing pair, submitted by us.
struct Flow {
    a: Task,
    b: Task,
    c: Task,
    d: Task,
    bad: Task,
    after_bad: Task,
}

async fn submit_flow(client: &CairnQ) -> Flow {
    let a = client.submit("flow_a", &json!({"n": 1})).await.expect("submit A");
    let b = client.submit("flow_b", &json!({"n": 2})).after([&a.id]).await.expect("submit B");
    let c = client.submit("flow_c", &json!({"n": 3})).after([&a.id]).await.expect("submit C");
    let d = client.submit("flow_d", &json!({"n": 4})).after([&b.id, &c.id]).await.expect("submit D");
    let bad = client.submit("flow_bad", &json!({})).max_attempts(1).await.expect("submit bad");
    let after_bad = client.submit("flow_a", &json!({"n": 5})).after([&bad.id]).await.expect("submit after bad");
    assert!([&b, &c, &d, &after_bad].iter().all(|t| is_waiting(t)), "the dependents wait");
    Flow { a, b, c, d, bad, after_bad }
}

/// When the peer's handler of `id` started and ended (seconds).
fn span(log: &Value, id: &str) -> (f64, f64) {
    let entry = log.as_array().and_then(|l| l.iter().find(|e| e["id"] == id));
    let entry = entry.unwrap_or_else(|| panic!("the peer ran {id}: {log}"));
    (entry["start"].as_f64().expect("start"), entry["end"].as_f64().expect("end"))
}

async fn python_runs_the_flow<F, Fut>(db: &str, open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = CairnQ>,
{
    let client = open().await;
    let flow = submit_flow(&client).await;
    client.close().await.expect("close: no cairnq-rs process runs from here");

    // Five tasks end: A, B, C, D and bad; after_bad is canceled by the trigger.
    let ran = peer(&["flow-worker", db, "flow_a,flow_b,flow_c,flow_d,flow_bad", "6", "flow_bad"]);
    assert_eq!(ran["terminal"], json!(6), "{ran}");
    assert_eq!(ran["listed"], json!(6), "the peer reads every row, waiting ones too: {ran}");
    assert_eq!(ran["stats_before"]["default"]["queued"], json!(6), "{ran}");
    let log = &ran["log"];
    let (a_start, a_end) = span(log, &flow.a.id);
    let (b_start, b_end) = span(log, &flow.b.id);
    let (c_start, c_end) = span(log, &flow.c.id);
    let (d_start, _) = span(log, &flow.d.id);
    assert!(a_start < a_end && b_start >= a_end && c_start >= a_end, "B and C after A: {log}");
    assert!(d_start >= b_end && d_start >= c_end, "D after B and C: {log}");
    assert!(
        log.as_array().is_some_and(|l| l.iter().all(|e| e["id"] != flow.after_bad.id.as_str())),
        "the dependent of a failed task never ran: {log}"
    );

    let client = open().await;
    let d = client.get(&flow.d.id).await.expect("get").expect("D");
    assert_eq!(d.status, TaskStatus::Succeeded, "{:?}", d.error);
    let deps = client.dependencies(&flow.d.id).await.expect("dependencies");
    let results: Vec<Value> =
        deps.iter().map(|t| t.result.as_ref().expect("a result").to_value().expect("JSON")).collect();
    assert_eq!(results[0]["payload"], json!({"n": 2}));
    assert_eq!(results[1]["payload"], json!({"n": 3}));
    let after_bad = client.get(&flow.after_bad.id).await.expect("get").expect("after_bad");
    assert_eq!(after_bad.status, TaskStatus::Canceled);
    let envelope = after_bad.error.as_ref().and_then(ErrorEnvelope::from_json).expect("an envelope");
    assert_eq!(envelope.code, "dependency_failed");
    assert_eq!(envelope.details["dependency_id"], json!(flow.bad.id));
    assert_eq!(envelope.details["dependency_status"], json!("failed"));
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_python_workers_run_a_flow_cairnq_rs_submitted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("flow.db");
    let db = path.to_str().expect("utf-8 path").to_string();
    python_runs_the_flow(&db, || async {
        CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open sqlite"))
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_python_workers_run_a_flow_cairnq_rs_submitted() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let db = format!("{dsn}#schema={schema}");
    python_runs_the_flow(&db, || async {
        let options = PostgresOptions::new().schema(&schema).listen(false);
        CairnQ::new(PostgresStore::connect_with(&dsn, options).await.expect("connect"))
    })
    .await;
}
