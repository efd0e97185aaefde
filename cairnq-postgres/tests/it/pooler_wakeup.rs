//! A worker in pooler mode hears of new work at once when it has a direct
//! listen DSN (issue 29): its store claims and settles through a real
//! PgBouncer in transaction mode while LISTEN goes straight to Postgres,
//! and a task submitted through the pooler starts long before the
//! worker's 30 s poll would find it. (Without a listen DSN the worker says
//! once that it polls: cairnq-cli's `pooler.rs`,
//! `a_worker_exec_with_a_schema_drains_through_a_transaction_pooler`, and
//! this crate's `pooler.rs`.) How the wakeup latency compares with a direct
//! connection's is measured, not asserted: `cargo xtask bench`'s pooler
//! variant. Skipped, saying so, where `pgbouncer` is not installed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairnq_core::CairnQ;
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{TestPooler, fresh_schema_name};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::dsn;
use crate::wakeups::until_listening;

/// The worker's poll: a start well before it was pushed.
const POLL: Duration = Duration::from_secs(30);
/// A third of the poll: a start later than this was not pushed.
const PUSHED_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_worker_with_a_listen_dsn_starts_a_task_long_before_its_thirty_second_poll() {
    let Some(pooler) = TestPooler::shared().expect("the test PgBouncer") else { return };
    let schema = fresh_schema_name();
    let options = PostgresOptions::new().schema(&schema).pooler(true).pool_size(4);
    let store =
        PostgresStore::connect_with(pooler.dsn(), options.clone().listen_dsn(dsn())).await.expect("connect pooled");
    until_listening(&store).await;
    // A producer through the pooler that does not listen itself.
    let producer =
        CairnQ::new(PostgresStore::connect_with(pooler.dsn(), options.listen(false)).await.expect("connect producer"));

    let issues = Arc::new(Mutex::new(Vec::new()));
    let seen = issues.clone();
    let worker_options = WorkerOptions::new().poll_interval(POLL).on_error(move |issue| {
        if matches!(issue, WorkerIssue::WakeupsLost { .. }) {
            seen.lock().expect("issues").push(issue.to_string());
        }
    });
    let mut worker = Worker::from_store(store, worker_options).expect("a worker");
    let (started, mut starts) = mpsc::unbounded_channel();
    worker
        .task("ping", move |_ctx: TaskContext, n: i64| {
            let started = started.clone();
            async move {
                let _ = started.send((n, Instant::now()));
                Ok::<_, TaskError>(n)
            }
        })
        .expect("register");
    let running = worker.spawn();

    // The first task runs at its first claim or on a wakeup; then the
    // worker is idle, in a 30 s wait only a notification cuts short.
    producer.submit("ping", &0).await.expect("submit");
    let (n, _) = tokio::time::timeout(2 * POLL, starts.recv()).await.expect("the first task starts").expect("a start");
    assert_eq!(n, 0);
    for n in 1..=3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let submitted = Instant::now();
        producer.submit("ping", &json!(n)).await.expect("submit through the pooler");
        let (started, at) = tokio::time::timeout(POLL, starts.recv()).await.expect("the task starts").expect("a start");
        assert_eq!(started, n);
        let delay = at.duration_since(submitted);
        assert!(delay < PUSHED_WITHIN, "task {n} started {delay:?} after its submit: polled, not pushed");
    }
    running.stop_and_join().await.expect("the worker stops");
    assert!(issues.lock().expect("issues").is_empty(), "push wakeups were never lost: {:?}", issues.lock());
}
