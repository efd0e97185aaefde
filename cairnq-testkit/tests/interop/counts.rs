//! The trigger-kept task counts of `ext_0002_task_counts` against the Python
//! SDK, which knows nothing of them: it makes the installation and writes
//! first (our migration backfills the counts), then submits, claims,
//! settles and purges beside us; after every step our stats() and
//! queue_depth, read from the counter table, equal the peer's stats, which
//! counts the rows themselves.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, ErrorEnvelope, Json, ListFilter, PurgeFilter, SubmitOptions, TaskSpec, TaskStatus, WorkerSession, codes,
};
use cairnq_testkit::support::session;
use serde_json::json;

use crate::support::peer;

/// Non-zero counts by queue and status, as both sides are compared.
type Counts = BTreeMap<String, BTreeMap<String, u64>>;

async fn ours(client: &CairnQ) -> Counts {
    let stats = client.stats(None).await.expect("stats");
    let mut counts = Counts::new();
    for (queue, c) in stats {
        let by_status = [
            ("queued", c.queued),
            ("running", c.running),
            ("succeeded", c.succeeded),
            ("failed", c.failed),
            ("canceled", c.canceled),
        ];
        let nonzero: BTreeMap<String, u64> =
            by_status.into_iter().filter(|(_, n)| *n > 0).map(|(s, n)| (s.to_string(), n)).collect();
        if !nonzero.is_empty() {
            counts.insert(queue, nonzero);
        }
    }
    counts
}

fn theirs(db: &str) -> Counts {
    let value = peer(&["stats", db]);
    let counts: Counts = serde_json::from_value(value).expect("the peer's stats");
    counts.into_iter().filter(|(_, c)| !c.is_empty()).collect()
}

/// Our counts equal the peer's, and queue_depth agrees with them.
async fn same(client: &CairnQ, db: &str, step: &str) {
    let (ours, theirs) = (ours(client).await, theirs(db));
    assert_eq!(ours, theirs, "counts differ after {step}");
    let queued = theirs.get("default").and_then(|c| c.get("queued")).copied().unwrap_or(0);
    let headroom = client.queue_depth("default", 1_000).await.expect("queue_depth");
    assert_eq!(headroom, 1_000 - queued, "queue_depth after {step}");
}

/// The envelope of a failed attempt.
fn failure() -> Json {
    ErrorEnvelope::new(codes::TASK_ERROR, "the attempt failed").to_json()
}

/// The lease holder the Rust side claims and settles as.
fn rust_worker(client: &CairnQ) -> WorkerSession {
    session(client, "worker_rust", Duration::from_secs(30))
}

async fn claim_one(client: &CairnQ, name: &str) -> String {
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec![name.into()]).limit(1);
    let claimed = rust_worker(client).claim(vec![draw], vec![]).await.expect("claim");
    claimed.into_iter().next().expect("a task to claim").id
}

/// The whole exchange on one database: `db` is the peer's spelling of it,
/// `open` opens our client on it (and so migrates it).
async fn counts_follow_the_peer<F, Fut>(db: &str, open: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = CairnQ>,
{
    peer(&["submit-many", db, "py_job", "12"]);
    let client = open().await;
    same(&client, db, "the backfill of a Python-made installation").await;

    let specs: Vec<TaskSpec> = (0..8).map(|i| TaskSpec::new("rs_job", &json!({ "i": i }))).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let elsewhere = SubmitOptions::new().queue("other");
    for i in 0..3 {
        client.submit("rs_job", &json!({ "i": i })).options(elsewhere.clone()).await.expect("submit");
    }
    same(&client, db, "our submits").await;

    peer(&["claim-complete", db, "py_job", r#"{"ok": true}"#]);
    peer(&["claim-fail", db, "py_job", "3"]);
    same(&client, db, "the peer's claims and settles").await;

    let done = claim_one(&client, "rs_job").await;
    rust_worker(&client).complete(&done, json!({"by": "rust"})).await.expect("complete");
    let running = claim_one(&client, "rs_job").await;
    let canceled = claim_one(&client, "rs_job").await;
    client.cancel(&canceled).await.expect("cancel");
    let filter = ListFilter::new().queue("default").name("rs_job").status(TaskStatus::Queued);
    let queued = client.list(&filter).await.expect("list").tasks;
    client.cancel(&queued[0].id).await.expect("cancel a queued task");
    same(&client, db, "our claims, settles and cancels").await;
    assert!(!running.is_empty());

    // Settled: 1 + 3 by the peer, 1 + 1 canceled by us; the peer's worker
    // runs the 8 py_jobs left.
    peer(&["worker", db, "py_job", "14"]);
    same(&client, db, "the peer's worker").await;

    client.retry(&queued[0].id).await.expect("retry");
    same(&client, db, "our retry").await;

    let purged = peer(&["purge", db]);
    assert!(purged.as_array().is_some_and(|ids| ids.len() >= 13), "the peer purged: {purged}");
    same(&client, db, "the peer's purge").await;

    let ours_purged = client.purge(&PurgeFilter::new().queue("other")).await.expect("purge");
    assert!(ours_purged.is_empty(), "nothing terminal on queue other");
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_counts_stay_exact_beside_the_python_sdk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path").to_string();
    counts_follow_the_peer(&db, || async {
        CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open sqlite"))
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_counts_stay_exact_beside_the_python_sdk() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let db = format!("{dsn}#schema={schema}");
    counts_follow_the_peer(&db, || async {
        let options = PostgresOptions::new().schema(&schema).listen(false);
        CairnQ::new(PostgresStore::connect_with(&dsn, options).await.expect("connect"))
    })
    .await;
}

/// Many writers at once, each on its own store (its own connections, so on
/// Postgres the statements really overlap): submits, bulk submits, claims
/// settled every way, cancels and purges. The counts must come out exactly
/// as the peer counts the rows.
async fn counts_survive_concurrent_writers<F, Fut>(db: &str, open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = CairnQ>,
{
    let mut writers = Vec::new();
    for lane in 0..6 {
        let client = open().await;
        writers.push(tokio::spawn(async move {
            for round in 0..15 {
                let specs: Vec<TaskSpec> = (0..5).map(|i| TaskSpec::new("job", &json!({ "i": i }))).collect();
                client.submit_many(&specs).await.expect("submit_many");
                client.submit("job", &json!({ "lane": lane })).await.expect("submit");
                let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["job".into()]).limit(3);
                let worker = session(&client, &format!("worker_{lane}"), Duration::from_secs(30));
                let claimed = worker.claim(vec![draw], vec![]).await.expect("claim");
                for (n, task) in claimed.iter().enumerate() {
                    match (n + round) % 3 {
                        0 => drop(worker.complete(&task.id, Json::null()).await.expect("complete")),
                        1 => drop(worker.fail(&task.id, failure(), None).await.expect("fail")),
                        _ => drop(client.cancel(&task.id).await.expect("cancel")),
                    }
                }
                if round % 5 == 4 {
                    client.purge(&PurgeFilter::new().limit(4)).await.expect("purge");
                }
            }
            client.close().await.expect("close");
        }));
    }
    for writer in writers {
        writer.await.expect("a writer panicked");
    }
    let client = open().await;
    same(&client, db, "concurrent writers").await;
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_counts_stay_exact_under_concurrent_writers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("busy.db");
    let db = path.to_str().expect("utf-8 path").to_string();
    counts_survive_concurrent_writers(&db, || async {
        CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open sqlite"))
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_counts_stay_exact_under_concurrent_writers() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let db = format!("{dsn}#schema={schema}");
    counts_survive_concurrent_writers(&db, || async {
        let options = PostgresOptions::new().schema(&schema).listen(false).pool_size(2);
        CairnQ::new(PostgresStore::connect_with(&dsn, options).await.expect("connect"))
    })
    .await;
}
