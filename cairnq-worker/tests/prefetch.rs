//! Prefetch and stop: a fast worker claims beyond its free call slots into a
//! local buffer; a stop must leave no buffered task stranded (still
//! `running` under this worker's lease) and must not use up an attempt of a
//! task it never started. Real SQLite files, real worker loops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, ListFilter, TaskSpec, TaskStatus};
use cairnq_testkit::support::count;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

async fn sqlite_client(dir: &tempfile::TempDir) -> CairnQ {
    let store = cairnq_sqlite::SqliteStore::open(dir.path().join("prefetch.db")).await.expect("open SQLite");
    CairnQ::new(store)
}

/// Concurrency 2, 600 no-op tasks, stopped mid-run: every claimed task was
/// run to success, and every task left queued was never claimed.
#[tokio::test(flavor = "multi_thread")]
async fn a_stop_runs_buffered_tasks_and_strands_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = sqlite_client(&dir).await;
    let specs: Vec<TaskSpec> = (0..600).map(|i| TaskSpec::new("noop", &json!({ "i": i }))).collect();
    client.submit_many(&specs).await.expect("submit");
    let running_now = Arc::new(AtomicUsize::new(0));
    let most_running = Arc::new(AtomicUsize::new(0));
    let mut worker = Worker::new(client.clone(), WorkerOptions::new().concurrency(2)).expect("worker");
    let (now, most) = (running_now.clone(), most_running.clone());
    worker
        .task("noop", move |_ctx: TaskContext, _payload: Value| {
            let (now, most) = (now.clone(), most.clone());
            async move {
                let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(running, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, TaskError>(Value::Null)
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&client, TaskStatus::Succeeded).await < 100 {
        assert!(Instant::now() < deadline, "the worker made no progress");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.stop_and_join().await.expect("stop");

    assert_eq!(count(&client, TaskStatus::Running).await, 0, "a claimed task was stranded by the stop");
    assert_eq!(count(&client, TaskStatus::Failed).await, 0);
    let succeeded = count(&client, TaskStatus::Succeeded).await;
    assert_eq!(succeeded + count(&client, TaskStatus::Queued).await, 600);
    let queued = client.list(&ListFilter::new().status(TaskStatus::Queued).limit(600)).await.expect("list");
    assert!(queued.tasks.iter().all(|t| t.attempt == 0 && t.error.is_none()), "a stop used up an attempt");
    assert!(most_running.load(Ordering::SeqCst) <= 2, "concurrency counts handler calls");
}

/// A lone worker draining a backlog holds more claimed rows than call
/// slots at some point (the prefetch). Without prefetch a worker of
/// concurrency 1 holds at most two: one running, one whose settle is being
/// written.
#[tokio::test(flavor = "multi_thread")]
async fn a_fast_worker_claims_beyond_its_free_slots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = sqlite_client(&dir).await;
    let specs: Vec<TaskSpec> = (0..3000).map(|_| TaskSpec::new("noop", &json!({}))).collect();
    client.submit_many(&specs).await.expect("submit");
    let mut worker = Worker::new(client.clone(), WorkerOptions::new().concurrency(1)).expect("worker");
    worker
        .task("noop", |_ctx: TaskContext, _payload: Value| async move { Ok::<_, TaskError>(Value::Null) })
        .expect("register");
    let handle = worker.spawn();
    let mut most_running = 0;
    while count(&client, TaskStatus::Succeeded).await < 3000 {
        most_running = most_running.max(count(&client, TaskStatus::Running).await);
        tokio::task::yield_now().await;
    }
    handle.stop_and_join().await.expect("stop");
    assert!(most_running > 4, "at most {most_running} claimed rows at concurrency 1: no prefetch");
}
