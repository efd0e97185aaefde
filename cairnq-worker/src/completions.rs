//! Completions of many handler calls share one store write.
//!
//! A worker running 64 tasks at once finishes them in bursts. Written one
//! by one, each completion would cost a statement and, on a durable store,
//! a commit of its own; through a [`Coalescer`] whatever finished while the
//! last write ran goes out in one `complete_batch`, and a lone completion
//! is written at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::backend::{BatchWrite, Coalescer, Linger, lost_lease};
use cairnq_core::{Json, Result, TaskStatus, WorkerSession};

use crate::retries::with_transient_retries;
use crate::state::Load;

/// The most completions one write carries.
const MAX_BATCH: usize = 512;

/// How many completions a lingering write waits for, at most: completions
/// that arrive this fast already share writes without waiting (`--serve`
/// at ~24,000 tasks/s lost 6% waiting for more).
const LINGER_GATHER: usize = 16;

/// `(task id, result)` pairs waiting for a shared write; each answers the
/// status its row was left in (`succeeded`, or `canceled` when a cancel won).
pub(crate) type CompletionQueue = Coalescer<(String, Json), TaskStatus>;

/// The queue of one worker: completes as the session's worker, answering
/// [`LostLease`](cairnq_core::Error::LostLease) for a task no longer its own.
/// With a `linger` above zero, a write waits up to that long for company
/// while other handler calls still run (`load`).
pub(crate) fn completion_queue(session: WorkerSession, linger: Duration, load: Arc<Load>) -> Arc<CompletionQueue> {
    let session = Arc::new(session);
    let write: BatchWrite<(String, Json), TaskStatus> = Arc::new(move |batch| {
        let session = Arc::clone(&session);
        Box::pin(async move { write_batch(&session, batch).await })
    });
    if linger.is_zero() {
        return Coalescer::new(MAX_BATCH, write);
    }
    let linger = Linger { wait: linger, gather: LINGER_GATHER, company: Arc::new(move || load.calls() > 0) };
    Coalescer::lingering(MAX_BATCH, linger, write)
}

async fn write_batch(session: &WorkerSession, batch: Vec<(String, Json)>) -> Vec<Result<TaskStatus>> {
    match with_transient_retries(|| session.complete_batch(batch.clone())).await {
        Ok(settled) => {
            let settled: HashMap<String, TaskStatus> = settled.into_iter().map(|t| (t.id, t.status)).collect();
            let owned = |id: &String| settled.get(id).copied().ok_or_else(|| lost_lease(id, session.worker_id()));
            batch.iter().map(|(id, _)| owned(id)).collect()
        }
        // One task at a time, so each gets its own outcome: a result the
        // store refuses fails only its own task.
        Err(_) => {
            let mut outcomes = Vec::with_capacity(batch.len());
            for (task_id, result) in batch {
                outcomes.push(session.complete(&task_id, result).await.map(|t| t.status));
            }
            outcomes
        }
    }
}
