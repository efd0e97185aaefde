//! Flow control (`ext_0006_limits`) beside the Python SDK, which knows
//! nothing of it: its producer submits limited work with nothing but
//! metadata, its writes of those rows go through our running index (an
//! expression on the metadata) on its own SQLite, and its worker claims
//! them unlimited, as the book's "Flow control" chapter says; those runs still count against the
//! limit for our claims.

use std::future::Future;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Limit, Task};
use cairnq_testkit::support::ByParams;
use serde_json::{Value, json};

use crate::support::peer;

async fn claim(client: &CairnQ) -> Vec<Task> {
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["limited".into()]).limit(10);
    client.claim(&ClaimParams::new("worker_rust", 60_000).draw(draw)).await.expect("claim")
}

async fn limits_beside_the_peer<F, Fut>(db: &str, open: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = CairnQ>,
{
    let client = open().await;
    client.set_limit(&Limit::new("tenant:*").concurrency(1)).await.expect("set a limit");
    let submitted = peer(&["submit-limited", db, "limited", "tenant:1", "4"]);
    assert_eq!(submitted.as_array().map(Vec::len), Some(4), "{submitted}");

    let ours = claim(&client).await;
    assert_eq!(ours.len(), 1, "one of the key at once");
    assert_eq!(ours[0].limit_key().as_deref(), Some("tenant:1"), "the key a Python producer wrote");
    let held = peer(&["claim-hold", db, "limited", "1"]);
    assert_eq!(held.as_array().map(Vec::len), Some(1), "the peer's worker does not enforce limits: {held}");
    client.complete(&SettleParams::new(&ours[0].id, "worker_rust")).await.expect("complete");
    assert!(claim(&client).await.is_empty(), "the peer's running task holds the key's one slot");

    let done = peer(&["claim-complete", db, "limited", r#"{"ok": true}"#]);
    assert_eq!(done["completed"]["status"], Value::from("succeeded"), "{done}");
    let stats = peer(&["stats", db]);
    assert_eq!(stats["default"], json!({"queued": 1, "running": 1, "succeeded": 2}), "{stats}");
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_limits_beside_the_python_sdk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path").to_string();
    limits_beside_the_peer(&db, || async {
        CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open sqlite"))
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_limits_beside_the_python_sdk() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let db = format!("{dsn}#schema={schema}");
    limits_beside_the_peer(&db, || async {
        let options = PostgresOptions::new().schema(&schema).listen(false);
        CairnQ::new(PostgresStore::connect_with(&dsn, options).await.expect("connect"))
    })
    .await;
}
