//! Watching queues: a dashboard-like loop reads `client.watch(["images"])`
//! while a worker runs the tasks an API side submits, all on a temporary
//! SQLite file. Each signal is a hint to look at the store; the loop prints
//! it with the queue's counts and ends once every task finished.
//!
//! ```text
//! cargo run -p cairnq-worker --example watch
//! ```

use std::collections::HashSet;
use std::time::Duration;

use cairnq_core::{CairnQ, Error, Result, Signal, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use futures::StreamExt;

const TASKS: usize = 3;

#[tokio::main]
async fn main() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::storage("cannot make a temp dir", e))?;
    let client = CairnQ::new(SqliteStore::open(dir.path().join("tasks.db")).await?);

    // Subscribed now: nothing submitted from here on is missed.
    let mut signals = client.watch(["images"])?.tick_every(Duration::from_millis(500))?;

    let mut worker = Worker::new(client.clone(), WorkerOptions::new().queues(["images"]))?;
    worker.task("thumbnail", |_ctx: TaskContext, width: u32| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok::<_, TaskError>(width / 4)
    })?;
    let worker = worker.spawn();

    let mut submitted = HashSet::new();
    for width in [640, 1280, 1920].into_iter().take(TASKS) {
        submitted.insert(client.submit("thumbnail", &width).queue("images").await?.id);
    }

    let mut finished = HashSet::new();
    while finished.len() < TASKS {
        let Some(signal) = signals.next().await else { break };
        match &signal {
            Signal::Finished { task_id } if submitted.contains(task_id) => {
                finished.insert(task_id.clone());
            }
            _ => {}
        }
        let stats = client.stats(Some("images")).await?;
        let [queued, running] = [TaskStatus::Queued, TaskStatus::Running].map(|s| stats["images"].get(s));
        println!("{signal:?}: {queued} queued, {running} running, {} of {TASKS} finished", finished.len());
    }
    drop(signals); // withdraws the subscription
    worker.stop_and_join().await?;
    client.close().await
}
