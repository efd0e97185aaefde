//! Completions of many handler calls share one store write.
//!
//! A worker running 64 tasks at once finishes them in bursts. Written one
//! by one, each completion would cost a statement and, on a durable store,
//! a commit of its own; through a [`Coalescer`] whatever finished while the
//! last write ran goes out in one `complete_batch`, and a lone completion
//! is written at once.

use std::collections::HashMap;
use std::sync::Arc;

use cairnq_core::backend::{Coalescer, lost_lease};
use cairnq_core::store::{CompleteBatchParams, SettleParams};
use cairnq_core::{CairnQ, Json, Result, TaskStatus};

use crate::retries::with_transient_retries;

/// The most completions one write carries.
const MAX_BATCH: usize = 512;

/// `(task id, result)` pairs waiting for a shared write; each answers the
/// status its row was left in (`succeeded`, or `canceled` when a cancel won).
pub(crate) type CompletionQueue = Coalescer<(String, Json), TaskStatus>;

/// The queue of one worker: completes as `worker_id`, answering
/// [`LostLease`](cairnq_core::Error::LostLease) for a task no longer its own.
pub(crate) fn completion_queue(client: CairnQ, worker_id: String) -> Arc<CompletionQueue> {
    let (client, worker_id) = (Arc::new(client), Arc::new(worker_id));
    Coalescer::new(
        MAX_BATCH,
        Arc::new(move |batch| {
            let (client, worker_id) = (Arc::clone(&client), Arc::clone(&worker_id));
            Box::pin(async move { write_batch(&client, &worker_id, batch).await })
        }),
    )
}

async fn write_batch(client: &CairnQ, worker_id: &str, batch: Vec<(String, Json)>) -> Vec<Result<TaskStatus>> {
    let params = CompleteBatchParams::new(worker_id, batch);
    match with_transient_retries(|| client.complete_batch(&params)).await {
        Ok(settled) => {
            let settled: HashMap<String, TaskStatus> = settled.into_iter().map(|t| (t.id, t.status)).collect();
            let owned = |id: &String| settled.get(id).copied().ok_or_else(|| lost_lease(id, worker_id));
            params.completions.iter().map(|(id, _)| owned(id)).collect()
        }
        // One task at a time, so each gets its own outcome: a result the
        // store refuses fails only its own task.
        Err(_) => {
            let mut outcomes = Vec::with_capacity(params.completions.len());
            for (task_id, result) in params.completions {
                outcomes.push(
                    client.complete(&SettleParams::new(task_id, worker_id).result(result)).await.map(|t| t.status),
                );
            }
            outcomes
        }
    }
}
