//! Quickstart: an API side submits work and a worker runs it, both on
//! `./tasks.db`. It prints progress and results, then exits by itself.
//!
//! ```text
//! cargo run -p cairnq-worker --example quickstart
//! ```
//!
//! In a real deployment the two halves are separate processes sharing the
//! database file (or a Postgres database); here they share one process to
//! keep the example short.

use std::collections::HashMap;
use std::time::Duration;

use cairnq_core::{CairnQ, Result, TaskDef};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Resize {
    image: String,
    width: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Resized {
    image: String,
    width: u32,
    passes: u32,
}

/// The task both sides agree on: its name, payload type and result type.
const RESIZE: TaskDef<Resize, Resized> = TaskDef::new("resize");

/// The handler: four passes, reporting progress after each.
async fn resize(ctx: TaskContext, job: Resize) -> std::result::Result<Resized, TaskError> {
    const PASSES: u32 = 4;
    for pass in 1..=PASSES {
        tokio::time::sleep(Duration::from_millis(150)).await;
        ctx.progress(f64::from(pass) / f64::from(PASSES)).message(format!("pass {pass}/{PASSES}")).await?;
    }
    Ok(Resized { image: job.image, width: job.width, passes: PASSES })
}

#[tokio::main]
async fn main() -> Result<()> {
    let client = CairnQ::new(SqliteStore::open("tasks.db").await?);

    // The worker side: two handler calls at a time.
    let mut worker = Worker::new(client.clone(), WorkerOptions::new().concurrency(2))?;
    worker.task(RESIZE, resize)?;
    let running = worker.spawn();

    // The API side: submit, then watch.
    let mut ids = Vec::new();
    for (image, width) in [("cat.png", 640), ("dog.png", 320), ("owl.png", 128)] {
        let task = RESIZE.submit(&client, &Resize { image: image.into(), width }).await?;
        println!("submitted {} ({image})", task.id);
        ids.push(task.id);
    }
    watch_progress(&client, &ids).await?;
    for id in &ids {
        if let Some(task) = client.get(id).await? {
            println!("{id}: {:?}", RESIZE.result_of(task));
        }
    }

    running.stop_and_join().await?;
    client.close().await
}

/// Prints each task's progress when it changes, until all are finished.
async fn watch_progress(client: &CairnQ, ids: &[String]) -> Result<()> {
    let mut shown: HashMap<&str, String> = HashMap::new();
    loop {
        let mut finished = 0;
        for id in ids {
            let Some(task) = client.get(id).await? else { continue };
            let line = format!(
                "{} {:>3.0}% {}",
                task.status,
                task.progress.unwrap_or(0.0) * 100.0,
                task.message.unwrap_or_default()
            );
            if shown.get(id.as_str()) != Some(&line) {
                println!("{id}: {line}");
                shown.insert(id, line);
            }
            finished += usize::from(task.status.is_terminal());
        }
        if finished == ids.len() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
