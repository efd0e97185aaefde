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
use cairnq_core::{Error, Result, Task};
use cairnq_sql::{Executor, flows};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::database::Database;
use crate::exec::SqliteExec;
use crate::group_commit::{Job, job};

/// The most tasks one coalesced insert carries.
const INSERT_CHUNK: usize = 1_000;

/// A store's way to its database's threads: `None` once the store is
/// closed (other stores on the database keep their own).
pub(crate) type Handle = Arc<Mutex<Option<Arc<Database>>>>;

/// Sends `job` to the writer through `handle` and waits for its outcome.
pub(crate) async fn send<T>(handle: &Handle, job: Box<dyn Job>, reply: oneshot::Receiver<Result<T>>) -> Result<T> {
    // Sent under the lock: a concurrent close sees this handle or the write queued.
    let sent = handle.lock().as_ref().map(|db| db.send_write(job));
    if sent != Some(true) {
        return Err(Error::StoreClosed);
    }
    reply.await.map_err(|_| Error::StoreClosed)?
}

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

async fn insert_batch(handle: &Handle, batch: Vec<NewTask>) -> Vec<Result<Task>> {
    if let [task] = batch.as_slice() {
        return vec![submit_one(handle, task.clone()).await];
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
