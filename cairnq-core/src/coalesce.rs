//! Group commit above the seam: calls that arrive while a write is in
//! flight share the next write.
//!
//! Many small writes at once (a worker's completions, a web server's
//! submits) each cost a statement and, on a durable store, a commit of
//! their own. A [`Coalescer`] queues them instead: whenever no write is in
//! flight, one is started for everything waiting, and what arrives while it
//! runs rides in the next one. A lone call is written at once (no timer, so
//! no added latency), and the write runs as a task of its own, so a caller
//! that stops waiting cannot strand the others.

use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// Writes a batch: one outcome per item, in the items' order.
pub type BatchWrite<I, O> = Arc<dyn Fn(Vec<I>) -> BoxFuture<'static, Vec<Result<O>>> + Send + Sync>;

/// Items waiting for a shared write (see the module docs).
///
/// ```
/// # use std::sync::Arc;
/// # use cairnq_core::backend::Coalescer;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let doubler = Coalescer::new(64, Arc::new(|items: Vec<i64>| {
///     Box::pin(async move { items.into_iter().map(|i| Ok(i * 2)).collect::<Vec<_>>() }) as _
/// }));
/// assert_eq!(doubler.call(21).await.unwrap(), 42_i64);
/// # }
/// ```
pub struct Coalescer<I, O> {
    write: BatchWrite<I, O>,
    max_batch: usize,
    state: Mutex<Waiting<I, O>>,
}

struct Waiting<I, O> {
    items: Vec<(I, oneshot::Sender<Result<O>>)>,
    /// A write task is running and will take what is waiting.
    writing: bool,
}

impl<I, O> std::fmt::Debug for Coalescer<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coalescer").field("max_batch", &self.max_batch).finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> Coalescer<I, O> {
    /// Writes with `write`, at most `max_batch` items at a time.
    pub fn new(max_batch: usize, write: BatchWrite<I, O>) -> Arc<Self> {
        let state = Mutex::new(Waiting { items: Vec::new(), writing: false });
        Arc::new(Self { write, max_batch: max_batch.max(1), state })
    }

    /// Queues `item` and waits for the outcome of the write that takes it.
    pub async fn call(self: &Arc<Self>, item: I) -> Result<O> {
        let (reply, outcome) = oneshot::channel();
        let start_writer = {
            let mut waiting = self.state.lock();
            waiting.items.push((item, reply));
            !std::mem::replace(&mut waiting.writing, true)
        };
        if start_writer {
            tokio::spawn(Arc::clone(self).write_all());
        }
        outcome.await.unwrap_or(Err(Error::StoreClosed))
    }

    /// Writes batches until nothing waits.
    async fn write_all(self: Arc<Self>) {
        loop {
            let batch = {
                let mut waiting = self.state.lock();
                if waiting.items.is_empty() {
                    waiting.writing = false;
                    return;
                }
                let take = waiting.items.len().min(self.max_batch);
                waiting.items.drain(..take).collect::<Vec<_>>()
            };
            let (items, replies): (Vec<I>, Vec<_>) = batch.into_iter().unzip();
            let mut outcomes = (self.write)(items).await.into_iter();
            for reply in replies {
                let outcome = outcomes.next().unwrap_or_else(|| Err(Error::corrupt_row("a batch write lost an item")));
                let _ = reply.send(outcome);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Calls made while a write runs share the next write; every caller
    /// gets its own item's outcome.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_during_a_write_share_the_next_and_each_gets_its_own_outcome() {
        let writes = Arc::new(AtomicUsize::new(0));
        let counted = writes.clone();
        let write: BatchWrite<u32, u32> = Arc::new(move |items: Vec<u32>| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                items.into_iter().map(|i| if i == 7 { Err(Error::StoreClosed) } else { Ok(i + 1) }).collect()
            })
        });
        let coalescer = Coalescer::new(1_000, write);
        let calls = (0..100).map(|i| {
            let coalescer = coalescer.clone();
            async move { (i, coalescer.call(i).await) }
        });
        for (i, outcome) in futures::future::join_all(calls).await {
            match outcome {
                Ok(out) => assert_eq!(out, i + 1),
                Err(_) => assert_eq!(i, 7, "only item 7 fails"),
            }
        }
        assert!(writes.load(Ordering::SeqCst) <= 3, "100 calls took {} writes", writes.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_write_that_answers_short_fails_the_rest_instead_of_hanging() {
        let coalescer: Arc<Coalescer<u32, u32>> = Coalescer::new(8, Arc::new(|_| Box::pin(async { Vec::new() })));
        assert!(coalescer.call(1).await.is_err());
    }
}
