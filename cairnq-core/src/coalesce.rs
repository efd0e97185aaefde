//! Group commit above the seam: calls that arrive while a write is in
//! flight share the next write.
//!
//! Many small writes at once (a worker's completions, a web server's
//! submits) each cost a statement and, on a durable store, a commit of
//! their own. A [`Coalescer`] queues them instead: whenever no write is in
//! flight, one is started for everything waiting, and what arrives while it
//! runs rides in the next one. A lone call is written at once (no timer, so
//! no added latency), and writes run as a task of their own, so a caller
//! that stops waiting cannot strand the others.
//!
//! [`Coalescer::lone_calls_in_caller`] writes a lone call in its caller's
//! task instead, saving the hand-over to the write task where a write is
//! itself a hand-over to another thread (SQLite's writer: one submit at a
//! time ran 1.22x, BENCHMARKS.md 2026-12-05T03:14Z). A lone caller that
//! stops waiting hands what queued behind it to a write task. Over
//! Postgres the same change measured 0.96x (one submit at a time) and
//! 0.93x (a worker's completions, `burn_down_c64`), so it is not the
//! default.
//!
//! [`Coalescer::lingering`] lets a write about to start wait a little for
//! company, while its owner says more calls are on their way: a worker
//! running commands at a few thousand per second finishes one every
//! fraction of a millisecond, and each write of one or two completions
//! was a commit of its own (`cairnq worker --exec`, BENCHMARKS.md
//! 2026-12-05T20:30Z). Only while company is coming: a lone call is still
//! written at once.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::{Notify, oneshot};

use crate::error::{Error, Result};

/// Writes a batch: one outcome per item, in the items' order.
pub type BatchWrite<I, O> = Arc<dyn Fn(Vec<I>) -> BoxFuture<'static, Vec<Result<O>>> + Send + Sync>;

/// Whether more calls are on their way now (a worker: other handler calls
/// still run), asked by a [`lingering`](Coalescer::lingering) coalescer
/// before each write.
pub type Company = Arc<dyn Fn() -> bool + Send + Sync>;

/// How a [`lingering`](Coalescer::lingering) coalescer's writes wait for
/// company.
pub struct Linger {
    /// The longest a write waits.
    pub wait: Duration,
    /// A write waits only while fewer calls than this wait for it, and
    /// goes as soon as this many do (calls that arrive this fast already
    /// share writes without waiting).
    pub gather: usize,
    /// Whether more calls are coming; a write waits only while they are.
    pub company: Company,
}

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
    /// A lone call is written in its caller's task.
    lone_in_caller: bool,
    linger: Option<Linger>,
    /// Notified when enough calls gathered: a lingering write goes at once.
    gathered: Notify,
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
        Self::build(max_batch, write, false, None)
    }

    /// Like [`new`](Self::new), but a write about to start for fewer than
    /// `linger.gather` calls first waits up to `linger.wait` for that many,
    /// when `linger.company` says more are coming (see the module docs).
    /// Each write then carries more calls, for up to `wait` more latency.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use cairnq_core::backend::{Coalescer, Linger};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let write = Arc::new(|items: Vec<i64>| {
    ///     Box::pin(async move { items.into_iter().map(|i| Ok(i * 2)).collect::<Vec<_>>() }) as _
    /// });
    /// let linger = Linger { wait: Duration::from_millis(2), gather: 16, company: Arc::new(|| false) };
    /// let doubler = Coalescer::lingering(64, linger, write);
    /// assert_eq!(doubler.call(21).await.unwrap(), 42_i64);
    /// # }
    /// ```
    pub fn lingering(max_batch: usize, linger: Linger, write: BatchWrite<I, O>) -> Arc<Self> {
        Self::build(max_batch, write, false, Some(linger))
    }

    /// Like [`new`](Self::new), but a lone call is written in its caller's
    /// task (see the module docs).
    pub fn lone_calls_in_caller(max_batch: usize, write: BatchWrite<I, O>) -> Arc<Self> {
        Self::build(max_batch, write, true, None)
    }

    fn build(max_batch: usize, write: BatchWrite<I, O>, lone_in_caller: bool, linger: Option<Linger>) -> Arc<Self> {
        let max_batch = max_batch.max(1);
        // A write takes at most a batch: it gathers no more than that.
        let linger = linger.map(|l| Linger { gather: l.gather.min(max_batch), ..l });
        let state = Mutex::new(Waiting { items: Vec::new(), writing: false });
        Arc::new(Self { write, max_batch, lone_in_caller, linger, gathered: Notify::new(), state })
    }

    /// Queues `item` and waits for the outcome of the write that takes it
    /// (written at once when no write is in flight).
    pub async fn call(self: &Arc<Self>, item: I) -> Result<O> {
        let alone = {
            let mut waiting = self.state.lock();
            let start_writing = !std::mem::replace(&mut waiting.writing, true);
            if start_writing && self.lone_in_caller {
                Ok(item)
            } else {
                let (reply, outcome) = oneshot::channel();
                waiting.items.push((item, reply));
                if self.linger.as_ref().is_some_and(|l| waiting.items.len() == l.gather) {
                    self.gathered.notify_one();
                }
                Err((outcome, start_writing))
            }
        };
        let item = match alone {
            Ok(item) => item,
            Err((outcome, start_writing)) => {
                if start_writing {
                    tokio::spawn(Arc::clone(self).write_all());
                }
                return outcome.await.unwrap_or(Err(Error::StoreClosed));
            }
        };
        let turn = WritingAlone(Arc::clone(self));
        let written = (self.write)(vec![item]).await.pop();
        drop(turn);
        written.unwrap_or_else(|| Err(lost_item()))
    }

    /// Ends a lone write: what queued meanwhile goes to a write task.
    fn hand_over(self: &Arc<Self>) {
        let mut waiting = self.state.lock();
        if waiting.items.is_empty() {
            waiting.writing = false;
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(Arc::clone(self).write_all())),
            // No runtime left to write them: their callers hear the store
            // is closed rather than wait for ever.
            Err(_) => {
                waiting.items.clear();
                waiting.writing = false;
            }
        }
    }

    /// Writes batches until nothing waits.
    async fn write_all(self: Arc<Self>) {
        loop {
            self.linger().await;
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
                let outcome = outcomes.next().unwrap_or_else(|| Err(lost_item()));
                let _ = reply.send(outcome);
            }
        }
    }
}

impl<I, O> Coalescer<I, O> {
    /// Waits up to the linger for calls to gather, when some wait, fewer
    /// than it gathers, and more are coming.
    async fn linger(&self) {
        let Some(linger) = &self.linger else { return };
        let waiting = self.state.lock().items.len();
        if (1..linger.gather).contains(&waiting) && (linger.company)() {
            let _ = tokio::time::timeout(linger.wait, self.gathered.notified()).await;
        }
    }
}

/// A batch write answered for fewer items than it was given.
fn lost_item() -> Error {
    Error::corrupt_row("a batch write lost an item")
}

/// A lone call's turn at writing, held while its write runs. Dropped when
/// the write ends or the caller stops waiting, it hands the calls that
/// queued behind it to a write task.
struct WritingAlone<I: Send + 'static, O: Send + 'static>(Arc<Coalescer<I, O>>);

impl<I: Send + 'static, O: Send + 'static> Drop for WritingAlone<I, O> {
    fn drop(&mut self) {
        self.0.hand_over();
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

    /// A lone call is written in its caller's task; when that caller
    /// stops waiting mid-write, the calls queued behind it are still
    /// written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lone_caller_that_stops_waiting_strands_no_one() {
        let write: BatchWrite<u32, u32> = Arc::new(|items: Vec<u32>| {
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                items.into_iter().map(|i| Ok(i + 1)).collect()
            })
        });
        let coalescer = Coalescer::lone_calls_in_caller(8, write);
        let lone = tokio::spawn({
            let coalescer = coalescer.clone();
            async move { coalescer.call(1).await }
        });
        while !coalescer.state.lock().writing {
            tokio::task::yield_now().await;
        }
        let queued = futures::future::join_all((2..5).map(|i| {
            let coalescer = coalescer.clone();
            tokio::spawn(async move { coalescer.call(i).await })
        }));
        let queued = tokio::spawn(queued);
        while coalescer.state.lock().items.len() < 3 {
            tokio::task::yield_now().await;
        }
        lone.abort();
        let queued = tokio::time::timeout(std::time::Duration::from_secs(10), queued).await;
        let outcomes: Vec<u32> = queued
            .expect("the queued calls are written, not stranded")
            .expect("joined")
            .into_iter()
            .map(|o| o.expect("joined").expect("written"))
            .collect();
        assert_eq!(outcomes, [3, 4, 5]);
        assert_eq!(coalescer.call(9).await.expect("written alone"), 10, "idle again after the hand-over");
    }

    /// A lingering coalescer that counts its writes; `company` as given.
    fn counted_lingering(gather: usize, company: bool) -> (Arc<Coalescer<u32, u32>>, Arc<AtomicUsize>) {
        let writes = Arc::new(AtomicUsize::new(0));
        let counted = writes.clone();
        let write: BatchWrite<u32, u32> = Arc::new(move |items: Vec<u32>| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { items.into_iter().map(|i| Ok(i + 1)).collect() })
        });
        let linger = Linger { wait: LINGER, gather, company: Arc::new(move || company) };
        (Coalescer::lingering(64, linger, write), writes)
    }

    const LINGER: Duration = Duration::from_millis(50);

    /// Calls `0, 1, ...` to a lingering coalescer, each after its delay in
    /// ms on tokio's paused clock (none for 0); their outcomes, how many
    /// writes took them, and how long until the last outcome.
    async fn calls_after(gather: usize, company: bool, delays_ms: &[u64]) -> (Vec<u32>, usize, Duration) {
        let (coalescer, writes) = counted_lingering(gather, company);
        let started = tokio::time::Instant::now();
        let calls = (0..).zip(delays_ms).map(|(i, ms)| {
            let coalescer = coalescer.clone();
            async move {
                if *ms > 0 {
                    tokio::time::sleep(Duration::from_millis(*ms)).await;
                }
                coalescer.call(i).await.expect("written")
            }
        });
        let outcomes = futures::future::join_all(calls).await;
        (outcomes, writes.load(Ordering::SeqCst), started.elapsed())
    }

    /// Calls a little apart share one write while company is coming, which
    /// waited the linger for them.
    #[tokio::test(start_paused = true)]
    async fn with_company_coming_calls_apart_share_one_write_after_the_linger() {
        let (outcomes, writes, took) = calls_after(64, true, &[0, 10, 20]).await;
        assert_eq!((outcomes, writes), (vec![1, 2, 3], 1));
        assert!(took >= LINGER, "the write waited for company");
    }

    /// Nobody else coming: a lone call is written at once.
    #[tokio::test(start_paused = true)]
    async fn without_company_a_lone_call_is_written_at_once() {
        assert_eq!(calls_after(64, false, &[0]).await, (vec![1], 1, Duration::ZERO));
    }

    /// Calls gathered while their write lingers go at once.
    #[tokio::test(start_paused = true)]
    async fn calls_gathering_cut_the_linger_short() {
        let (outcomes, writes, took) = calls_after(4, true, &[0, 0, 0, 10]).await;
        assert_eq!((outcomes, writes), (vec![1, 2, 3, 4], 1));
        assert!(took < LINGER, "waited {took:?}");
    }

    /// As many calls as a write gathers, waiting already: no linger.
    #[tokio::test(start_paused = true)]
    async fn calls_already_gathered_go_at_once() {
        assert_eq!(calls_after(2, true, &[0, 0, 0]).await, (vec![1, 2, 3], 1, Duration::ZERO));
    }

    #[tokio::test]
    async fn a_write_that_answers_short_fails_the_rest_instead_of_hanging() {
        let coalescer: Arc<Coalescer<u32, u32>> = Coalescer::new(8, Arc::new(|_| Box::pin(async { Vec::new() })));
        assert!(coalescer.call(1).await.is_err());
    }
}
