//! Batches and resources: `embed` tasks arrive 16 per handler call, while
//! `render` and `upscale` share one `gpu` and never run at the same time.
//! Runs on a temporary SQLite file and exits by itself when done.
//!
//! ```text
//! cargo run -p cairnq-worker --example batch_resources
//! ```

use std::collections::HashMap;
use std::time::Duration;

use cairnq_core::{CairnQ, Result, TaskDef, TaskSpec, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{BatchItem, TaskContext, TaskError, TaskOptions, Worker, WorkerOptions};

/// Sentences in, their lengths out.
const EMBED: TaskDef<String, usize> = TaskDef::new("embed");
/// A frame number in, a message out; `render` and `upscale` share the gpu.
const RENDER: TaskDef<u32, String> = TaskDef::new("render");
const UPSCALE: TaskDef<u32, String> = TaskDef::new("upscale");

#[tokio::main]
async fn main() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| cairnq_core::Error::storage("temp dir", e))?;
    let client = CairnQ::new(SqliteStore::open(dir.path().join("tasks.db")).await?);

    let options = WorkerOptions::new().concurrency(4).resource("gpu", 1);
    let mut worker = Worker::new(client.clone(), options)?;
    worker.batch_task(EMBED, 16, embed)?;
    worker.task_with(RENDER, TaskOptions::new().resource("gpu"), gpu_job)?;
    worker.task_with(UPSCALE, TaskOptions::new().resource("gpu"), gpu_job)?;
    let running = worker.spawn();

    let submit = cairnq_core::SubmitOptions::new();
    let mut specs: Vec<TaskSpec> = (0..64).map(|i| EMBED.spec(&format!("sentence {i}"), submit.clone())).collect();
    specs.extend((0..5).flat_map(|i| [RENDER.spec(&i, submit.clone()), UPSCALE.spec(&i, submit.clone())]));
    let total = specs.len();
    client.submit_many(&specs).await?;
    println!("submitted {total} tasks");

    loop {
        let stats = client.stats(None).await?;
        let done: u64 = stats.values().map(|c| c.get(TaskStatus::Succeeded) + c.get(TaskStatus::Failed)).sum();
        println!("{done}/{total} finished");
        if usize::try_from(done).unwrap_or(usize::MAX) >= total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    running.stop_and_join().await?;
    client.close().await
}

/// One call embeds a whole batch; the map gives each task its own result.
async fn embed(batch: Vec<BatchItem<String>>) -> std::result::Result<HashMap<String, usize>, TaskError> {
    println!("embedding a batch of {}", batch.len());
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(batch.iter().map(|item| (item.ctx.task_id().to_string(), item.payload.len())).collect())
}

/// Holds the gpu for a moment; the worker never runs two of these at once.
async fn gpu_job(ctx: TaskContext, frame: u32) -> std::result::Result<String, TaskError> {
    println!("{} frame {frame} on the gpu", ctx.name());
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(format!("{} {frame} done", ctx.name()))
}
