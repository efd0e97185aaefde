//! Pooler mode through a real PgBouncer in transaction mode (issue 29):
//! without a listen DSN the store says at once that it polls and still
//! delivers by polling; with one, LISTEN goes straight to Postgres and
//! wakes waiters through the pooler; keyed submits (transactions holding
//! advisory locks) work through it; and the server connections report the
//! application name `doctor` groups by; a claim recovers expired leases
//! before it draws.
//! Skipped (saying so) where `pgbouncer` is not installed.

use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Store, TaskStatus, WaitOptions, Wake};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{TestPooler, fresh_schema_name};
use serde_json::json;

use crate::support::{dsn, fresh};
use crate::wakeups::until_listening;

const LONG: Duration = Duration::from_secs(60);

fn pooler() -> Option<&'static TestPooler> {
    TestPooler::shared().expect("the test PgBouncer")
}

async fn pooled(pooler: &TestPooler, options: PostgresOptions) -> PostgresStore {
    PostgresStore::connect_with(pooler.dsn(), options.pooler(true).pool_size(4))
        .await
        .expect("connect through the pooler")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_listen_dsn_the_store_says_it_polls_and_delivers_by_polling() {
    let Some(pooler) = pooler() else { return };
    let schema = fresh_schema_name();
    let store = pooled(pooler, PostgresOptions::new().schema(&schema)).await;
    assert!(!store.capabilities().push_wakeups);
    // Said at once, for a worker to log once at its start.
    let said = tokio::time::timeout(Duration::from_secs(1), store.notifications().lost()).await.expect("said at once");
    assert!(said.to_string().contains("polls") && said.to_string().contains("listen"), "{said}");

    let client = CairnQ::new(store.clone());
    let task = client.submit("echo", &json!({"n": 1})).await.expect("submit through the pooler");
    let worker_side = pooled(pooler, PostgresOptions::new().schema(&schema)).await;
    let settle = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let params = ClaimParams::new("w", 30_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1));
        let id = worker_side.claim(&params).await.expect("claim")[0].id.clone();
        worker_side.complete(&SettleParams::new(&id, "w").result(json!({"n": 1}))).await.expect("complete");
    });
    let done = client.wait(&task.id, &WaitOptions::new().timeout(LONG)).await.expect("wait by polling");
    settle.await.expect("settler");
    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!({"n": 1}).into())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_dsn_wakes_waiters_through_the_pooler() {
    let Some(pooler) = pooler() else { return };
    let schema = fresh_schema_name();
    let store = pooled(pooler, PostgresOptions::new().schema(&schema).listen_dsn(dsn())).await;
    assert!(store.capabilities().push_wakeups);
    until_listening(&store).await;
    let producer = pooled(pooler, PostgresOptions::new().schema(&schema).listen(false)).await;
    // Without a notification this watch never ends: nothing polls here.
    let watch = store.notifications().watch(&Wake::Queued(vec!["mail".into()]));
    let started = Instant::now();
    CairnQ::new(producer).submit("send", &json!({})).queue("mail").await.expect("submit through the pooler");
    tokio::time::timeout(LONG, watch).await.expect("the submit's notification woke the watch");
    assert!(started.elapsed() < LONG);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_submits_work_through_the_pooler() {
    let Some(pooler) = pooler() else { return };
    let schema = fresh_schema_name();
    let client = CairnQ::new(pooled(pooler, PostgresOptions::new().schema(&schema)).await);
    for n in 0..50 {
        let key = format!("k{}", n % 10);
        client.submit("n", &json!({"n": n})).key(key).await.expect("a keyed submit (a transaction with a lock)");
    }
    assert_eq!(client.stats(None).await.expect("stats")["default"].queued, 10, "one live task per key");
}

/// Direct connections report the store's application name, which `cairnq
/// doctor` groups the database's connections by (through a pooler, a
/// server connection reports the last client it served).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_report_the_store_s_application_name() {
    let (_, schema) = fresh().await;
    let name = format!("cairnq-rs test {schema}");
    let options = PostgresOptions::new().schema(&schema).application_name(&name);
    let store = PostgresStore::connect_with(&dsn(), options).await.expect("connect");
    CairnQ::new(store.clone()).submit("n", &json!({})).await.expect("submit");
    let raw = crate::support::raw(&dsn()).await;
    let sql = "select count(*) from pg_stat_activity where application_name = $1";
    let named: i64 = raw.query_one(sql, &[&name]).await.expect("pg_stat_activity").get(0);
    assert!(named >= 1, "the pooled connection reports the store's name");
    store.close().await.expect("close");
}

/// A claim's lease recovery runs before its draw in pooler mode too: a
/// lease that ran out is taken back and the very next claim gets the task
/// again (attempt 2). Learning a statement's types (a round trip) once let
/// a later statement of the transaction overtake it: the draw ran first,
/// saw the task still running, and the claim came back empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_claim_takes_back_a_lease_that_ran_out() {
    let Some(pooler) = pooler() else { return };
    let schema = fresh_schema_name();
    let client = CairnQ::new(pooled(pooler, PostgresOptions::new().schema(&schema)).await);
    let task = client.submit("n", &json!({})).max_attempts(5).await.expect("submit");
    let draw = || vec![ClaimDraw::new(vec!["default".into()]).limit(1)];
    let short = client.worker_session("w", Duration::from_millis(150)).expect("a session");
    let first = short.claim(draw(), vec![]).await.expect("claim");
    assert_eq!(first.iter().map(|t| (t.id.as_str(), t.attempt)).collect::<Vec<_>>(), [(task.id.as_str(), 1)]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = client.worker_session("w", LONG).expect("a session").claim(draw(), vec![]).await.expect("reclaim");
    assert_eq!(again.iter().map(|t| (t.id.as_str(), t.attempt)).collect::<Vec<_>>(), [(task.id.as_str(), 2)]);
}
