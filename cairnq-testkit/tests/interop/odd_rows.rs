//! Rows a Rust reader finds odd never stop a queue. The Python SDK writes
//! some through its normal API (a REAL priority, a payload holding a lone
//! surrogate escape); a broken writer leaves others (a payload that is not
//! JSON, a status no protocol state names). With all of them queued, a Rust
//! worker drains every other task, fails the undecodable ones it draws with
//! an envelope naming the column, and list and stats still answer.

use std::time::Duration;

use cairnq_core::{CairnQ, ErrorEnvelope, ListFilter, TaskStatus, codes};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

use crate::support::peer;

/// Inserts a row as a broken writer would: past the schema's checks.
fn insert_raw(path: &std::path::Path, status: &str, payload: &str) -> String {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    conn.pragma_update(None, "ignore_check_constraints", true).expect("pragma");
    let id = cairnq_core::backend::new_task_id();
    conn.execute(
        "insert into cairnq_tasks (id, name, queue, status, payload, run_at_ms, root_id, created_at_ms, updated_at_ms)
         values (?1, 'job', 'default', ?2, ?3, 0, ?1, 0, 0)",
        rusqlite::params![id, status, payload],
    )
    .expect("raw insert");
    id
}

/// The stored error envelope of a row, read past the SDK (the row itself
/// may still not decode).
fn raw_envelope(path: &std::path::Path, id: &str) -> (String, ErrorEnvelope) {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let (status, error): (String, String) = conn
        .query_row("select status, error from cairnq_tasks where id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("row");
    (status, serde_json::from_str(&error).expect("an envelope"))
}

/// Runs an echoing worker for `job` until the default queue holds this
/// many succeeded and failed rows.
async fn drain(client: &CairnQ, succeeded: u64, failed: u64) {
    let options = WorkerOptions::new().concurrency(2).poll_interval(Duration::from_millis(20));
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker
        .task("job", |_ctx: TaskContext, payload: Value| async move { Ok::<_, TaskError>(payload) })
        .expect("register");
    let handle = worker.spawn();
    for _ in 0..500 {
        let stats = client.stats(Some("default")).await.expect("stats");
        if stats["default"].succeeded == succeeded && stats["default"].failed == failed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.stop_and_join().await.expect("worker stops");
}

/// The `(id, column)` pairs a page reports as undecodable, sorted.
fn reported(page: &cairnq_core::TaskPage) -> Vec<(String, String)> {
    let mut bad: Vec<_> =
        page.undecodable.iter().map(|u| (u.task_id.clone().unwrap_or_default(), u.column.clone())).collect();
    bad.sort();
    bad
}

fn sorted(mut pairs: Vec<(&str, &str)>) -> Vec<(String, String)> {
    pairs.sort();
    pairs.into_iter().map(|(id, column)| (id.to_string(), column.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_sqlite_rows_are_decoded_or_isolated_and_the_queue_drains() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("odd.db");
    let db = path.to_str().expect("utf-8 path");
    let odd = peer(&["submit-odd", db, "job"]);
    let (real_priority, surrogate) =
        (odd["real_priority"].as_str().expect("id"), odd["surrogate"].as_str().expect("id"));
    let not_json = insert_raw(&path, "queued", "{not json");
    let weird = insert_raw(&path, "weird", "{}");

    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let mut good = Vec::new();
    for n in 0..5 {
        good.push(client.submit("job", &json!({"n": n})).await.expect("submit").id);
    }

    let page = client.list(&ListFilter::new().queue("default")).await.expect("list answers");
    assert_eq!(page.tasks.len(), 6, "the good rows and the surrogate one decode: {page:?}");
    let expected = sorted(vec![(real_priority, "priority"), (&not_json, "payload"), (&weird, "status")]);
    assert_eq!(reported(&page), expected, "each bad row is named by id and column");
    let stats = client.stats(Some("default")).await.expect("stats answer");
    assert_eq!((stats["default"].queued, stats["default"].unrecognized), (8, 1));

    drain(&client, 6, 2).await;

    for id in &good {
        assert_eq!(client.get(id).await.expect("get").expect("row").status, TaskStatus::Succeeded);
    }
    let kept = client.get(surrogate).await.expect("get").expect("row");
    assert_eq!(kept.status, TaskStatus::Succeeded, "a lone surrogate decodes as U+FFFD");
    assert_eq!(kept.result.expect("result").to_value().expect("JSON"), json!({"s": "a\u{fffd}b"}));
    assert!(kept.payload.as_str().contains("\\ud800"), "the stored text keeps the escape: {}", kept.payload);
    for (id, column) in [(real_priority, "priority"), (not_json.as_str(), "payload")] {
        let (status, envelope) = raw_envelope(&path, id);
        assert_eq!(status, "failed", "{id}");
        assert_eq!((envelope.code.as_str(), envelope.retryable), (codes::UNDECODABLE_ROW, false));
        assert_eq!(envelope.details["column"], column, "{envelope:?}");
    }
    let stats = client.stats(Some("default")).await.expect("stats");
    assert_eq!((stats["default"].succeeded, stats["default"].failed, stats["default"].unrecognized), (6, 2, 1));
    client.close().await.expect("close");
}

/// Postgres enforces more of the schema, so a broken writer there is one
/// that changed it: a status check dropped, a priority column retyped to
/// `double precision` (an integral `2.0` still decodes; `1.5` does not).
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_postgres_rows_are_decoded_or_isolated_and_the_queue_drains() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    use cairnq_testkit::postgres::{fresh_schema_name, test_dsn};

    let dsn = test_dsn().expect("a test Postgres server");
    let schema = fresh_schema_name();
    let store = PostgresStore::connect_with(&dsn, PostgresOptions::new().schema(&schema)).await.expect("connect");
    let client = CairnQ::new(store);
    let mut good = Vec::new();
    for n in 0..5 {
        good.push(client.submit("job", &json!({"n": n})).await.expect("submit").id);
    }
    let raw = cairnq_testkit::postgres::raw(&dsn).await;
    let constraint: String = raw
        .query_one(
            "select conname from pg_constraint c join pg_namespace n on n.oid = c.connamespace
             where n.nspname = $1 and c.contype = 'c' and pg_get_constraintdef(c.oid) like '%status%'",
            &[&schema],
        )
        .await
        .expect("the status check")
        .get(0);
    let break_schema = format!(
        "alter table {schema}.cairnq_tasks drop constraint {constraint};
         alter table {schema}.cairnq_tasks alter column priority type double precision"
    );
    raw.batch_execute(&break_schema).await.expect("break the schema");
    let insert = |status: &str, priority: f64| {
        let id = cairnq_core::backend::new_task_id();
        let sql = format!(
            "insert into {schema}.cairnq_tasks (id, name, queue, status, payload, priority, run_at_ms, root_id, created_at_ms, updated_at_ms)
             values ('{id}', 'job', 'default', '{status}', '{{}}', {priority}, 0, '{id}', 0, 0)"
        );
        (id, sql)
    };
    let (weird, weird_sql) = insert("weird", 0.0);
    let (real, real_sql) = insert("queued", 1.5);
    let (integral, integral_sql) = insert("queued", 2.0);
    raw.batch_execute(&format!("{weird_sql}; {real_sql}; {integral_sql}")).await.expect("odd rows");

    let page = client.list(&ListFilter::new().queue("default")).await.expect("list answers");
    assert_eq!(page.tasks.len(), 6, "the good rows and the integral REAL priority decode: {page:?}");
    assert_eq!(reported(&page), sorted(vec![(&real, "priority"), (&weird, "status")]));
    let stats = client.stats(Some("default")).await.expect("stats answer");
    assert_eq!((stats["default"].queued, stats["default"].unrecognized), (7, 1));

    drain(&client, 6, 1).await;
    for id in good.iter().chain([&integral]) {
        assert_eq!(client.get(id).await.expect("get").expect("row").status, TaskStatus::Succeeded, "{id}");
    }
    let row = raw
        .query_one(&format!("select status, error::text from {schema}.cairnq_tasks where id = $1"), &[&real])
        .await
        .expect("row");
    let (status, error): (String, String) = (row.get(0), row.get(1));
    let envelope: ErrorEnvelope = serde_json::from_str(&error).expect("an envelope");
    assert_eq!((status.as_str(), envelope.code.as_str()), ("failed", codes::UNDECODABLE_ROW));
    assert_eq!(envelope.details["column"], "priority", "{envelope:?}");
    client.close().await.expect("close");
}
