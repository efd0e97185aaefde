//! Completions of many handler calls share one store write.
//!
//! A worker running 64 tasks at once finishes them in bursts. Written one
//! by one, each completion costs a statement and, on a durable store, a
//! commit of its own. Completions wait here instead: whenever no write is
//! in flight, one is started for everything waiting, and what arrives while
//! it runs rides in the next one. A lone completion is written at once (no
//! timer, so no added latency), and the writer is a task of its own, so a
//! caller that stops waiting cannot strand the others.

use std::collections::HashSet;
use std::sync::Arc;

use cairnq_core::store::{CompleteBatchParams, SettleParams, lost_lease};
use cairnq_core::{CairnQ, Error, Result};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::core::with_transient_retries;

/// The most completions one write carries.
const MAX_BATCH: usize = 512;

/// Completions waiting for a write, shared by every call of one worker.
pub(crate) struct CompletionQueue {
    client: CairnQ,
    worker_id: String,
    state: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    completions: Vec<Completion>,
    /// A writer task is running and will take what is waiting.
    writing: bool,
}

struct Completion {
    task_id: String,
    result: Value,
    reply: oneshot::Sender<Result<()>>,
}

impl CompletionQueue {
    pub(crate) fn new(client: CairnQ, worker_id: String) -> Arc<Self> {
        Arc::new(Self { client, worker_id, state: Mutex::default() })
    }

    /// Completes `task_id` with `result` (cancel wins), sharing the write
    /// with whatever else completes meanwhile. [`Error::LostLease`] when
    /// the task was no longer this worker's.
    pub(crate) async fn complete(self: &Arc<Self>, task_id: &str, result: Value) -> Result<()> {
        let (reply, outcome) = oneshot::channel();
        let start_writer = {
            let mut waiting = self.state.lock();
            waiting.completions.push(Completion { task_id: task_id.to_string(), result, reply });
            !std::mem::replace(&mut waiting.writing, true)
        };
        if start_writer {
            tokio::spawn(Arc::clone(self).write_all());
        }
        outcome.await.unwrap_or_else(|_| Err(Error::StoreClosed))
    }

    /// Writes batches until nothing waits.
    async fn write_all(self: Arc<Self>) {
        loop {
            let batch = {
                let mut waiting = self.state.lock();
                if waiting.completions.is_empty() {
                    waiting.writing = false;
                    return;
                }
                let take = waiting.completions.len().min(MAX_BATCH);
                waiting.completions.drain(..take).collect::<Vec<_>>()
            };
            self.write_batch(batch).await;
        }
    }

    async fn write_batch(&self, batch: Vec<Completion>) {
        let pairs = batch.iter().map(|c| (c.task_id.clone(), c.result.clone())).collect();
        let params = CompleteBatchParams::new(&self.worker_id, pairs);
        match with_transient_retries(|| self.client.complete_batch(&params)).await {
            Ok(settled) => {
                let settled: HashSet<String> = settled.into_iter().map(|t| t.id).collect();
                for completion in batch {
                    let outcome = if settled.contains(&completion.task_id) {
                        Ok(())
                    } else {
                        Err(lost_lease(&completion.task_id, &self.worker_id))
                    };
                    let _ = completion.reply.send(outcome);
                }
            }
            // One task at a time, so each gets its own outcome: a result
            // the store refuses fails only its own task.
            Err(_) => {
                for completion in batch {
                    let params = SettleParams::new(&completion.task_id, &self.worker_id, completion.result);
                    let _ = completion.reply.send(self.client.complete(&params).await.map(drop));
                }
            }
        }
    }
}
