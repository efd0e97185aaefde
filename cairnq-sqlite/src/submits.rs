//! Plain submits coalesced into shared writes, as the Postgres store does
//! ([`Coalescer`]): every unkeyed submit waiting goes to the writer as one
//! job with one multi-row insert (`insert_tasks`), not a job and an insert
//! each. The writer's group commit already shares the commit (one fsync);
//! one statement for the rows also shares what SQLite pays per statement:
//! the bind and step, and the statement journal that any row trigger on
//! the task table opens, about a fifth of a one-row insert on a file with
//! the extension tables (BENCHMARKS.md, 2026-12-04T21:15Z). A batch the
//! writer refuses is written again one task at a time, so each submit gets
//! its own outcome. A submit that finds no insert in flight is sent from
//! its caller's task ([`Coalescer::lone_calls_in_caller`]): one submit at a
//! time otherwise paid a hand-over to the queue's task on top of the one to
//! the writer thread (0.85x before the merge, BENCHMARKS.md
//! 2026-12-05T03:14Z).

use std::sync::Arc;

use cairnq_core::backend::Coalescer;
use cairnq_core::store::NewTask;
use cairnq_core::{Result, Task};
use cairnq_sql::{Executor, flows};

use crate::database::{Handle, send};
use crate::exec::SqliteExec;
use crate::group_commit::job;

/// The most tasks one coalesced insert carries.
const INSERT_CHUNK: usize = 1_000;

/// The queue of a store's plain submits.
pub(crate) fn submit_queue(handle: Handle) -> Arc<Coalescer<NewTask, Task>> {
    Coalescer::lone_calls_in_caller(
        INSERT_CHUNK,
        Arc::new(move |batch| {
            let handle = Arc::clone(&handle);
            Box::pin(async move { insert_batch(&handle, batch).await })
        }),
    )
}

async fn insert_batch(handle: &Handle, mut batch: Vec<NewTask>) -> Vec<Result<Task>> {
    if batch.len() == 1 {
        // A lone submit (the common case one at a time) is moved, not copied.
        if let Some(task) = batch.pop() {
            return vec![submit_one(handle, task).await];
        }
    }
    let batch = Arc::new(batch);
    let rows = Arc::clone(&batch);
    let (together, reply) = job(move |mut ctx| {
        let exec = SqliteExec::writing(&mut ctx);
        exec.run(exec.insert_unkeyed(&rows))
    });
    match send(handle, together, reply).await {
        Ok(tasks) => tasks.into_iter().map(Ok).collect(),
        Err(_) => futures::future::join_all(batch.iter().map(|task| submit_one(handle, task.clone()))).await,
    }
}

async fn submit_one(handle: &Handle, task: NewTask) -> Result<Task> {
    let (one, reply) = job(move |mut ctx| {
        let exec = SqliteExec::writing(&mut ctx);
        exec.run(flows::submit(&exec, &task))
    });
    send(handle, one, reply).await
}
