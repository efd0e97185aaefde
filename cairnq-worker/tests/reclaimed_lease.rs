//! A worker that claims again a task whose earlier attempt it still runs.
//!
//! It happens when a heartbeat fails (a busy or unreachable database) long
//! enough for the lease to lapse: the same worker's next claim recovers the
//! lease and takes the task as attempt 2 while attempt 1's handler is still
//! running. Both attempts then carry this worker's id and attempt 2's lease,
//! so the store cannot tell them apart: the worker must. Attempt 1 is lost
//! from the moment attempt 2 is claimed (its result is not written), and
//! attempt 1 ending must not stop attempt 2's heartbeat.
//!
//! The lapse is made on the real SQLite file by another connection (the
//! lease set to a past time), which is what a stalled heartbeat leaves.

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_sqlite::rusqlite::Connection;
use cairnq_testkit::support::{eventually, finished};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Notify, mpsc};

/// What the handler tells the test: an attempt started (its number), or
/// an attempt is returning (its number and whether it saw its lease lost).
#[derive(Debug, PartialEq)]
enum Seen {
    Started(u32),
    Returning(u32, bool),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_claimed_again_by_its_own_worker_is_lost_and_the_new_one_settles() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("queue.db");
    let store = SqliteStore::open(&path).await.expect("open");

    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let releases: Arc<[Notify; 2]> = Arc::new([Notify::new(), Notify::new()]);
    let lost_reports = Arc::new(Mutex::new(Vec::new()));
    let reports = lost_reports.clone();
    // The heartbeat comes every 20 s: it must not notice the lapse before
    // the worker's own claim takes the task again (polled every 50 ms).
    let options = WorkerOptions::new()
        .concurrency(2)
        .lease(Duration::from_secs(60))
        .heartbeat(Duration::from_secs(20))
        .poll_interval(Duration::from_millis(50))
        .on_error(move |issue| {
            if let WorkerIssue::LostLeases { task_ids } = issue {
                reports.lock().extend(task_ids.iter().cloned());
            }
        });
    let mut worker = Worker::from_store(store, options).expect("worker");
    let client: CairnQ = worker.client().clone();
    let held = releases.clone();
    worker
        .task("twice", move |ctx: TaskContext, _: serde_json::Value| {
            let (seen, held) = (seen_tx.clone(), held.clone());
            async move {
                let attempt = ctx.attempt();
                seen.send(Seen::Started(attempt)).expect("test listening");
                held[usize::from(attempt > 1)].notified().await;
                seen.send(Seen::Returning(attempt, ctx.lost_lease())).expect("test listening");
                Ok::<_, TaskError>(json!({ "attempt": attempt }))
            }
        })
        .expect("register");
    let running = worker.spawn();

    let task = client.submit("twice", &json!({})).await.expect("submit");
    assert_eq!(seen.recv().await, Some(Seen::Started(1)));
    let lapse = Connection::open(&path)
        .and_then(|c| c.execute("update cairnq_tasks set lease_until_ms = 1 where id = ?1", [&task.id]))
        .expect("lapse the lease");
    assert_eq!(lapse, 1);
    assert_eq!(seen.recv().await, Some(Seen::Started(2)), "the same worker claims the task again");
    eventually("attempt 1 is reported lost", || async { lost_reports.lock().contains(&task.id) }).await;

    releases[0].notify_one();
    assert_eq!(seen.recv().await, Some(Seen::Returning(1, true)), "attempt 1 knows it was lost");
    // Attempt 1's return must write nothing: give a wrong write time to land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let row = client.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((row.status, row.attempt), (TaskStatus::Running, 2), "attempt 2 still holds the task");

    releases[1].notify_one();
    assert_eq!(seen.recv().await, Some(Seen::Returning(2, false)), "attempt 2 kept its lease");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!({ "attempt": 2 }).into())));
    running.stop_and_join().await.expect("the worker stops cleanly");
}
