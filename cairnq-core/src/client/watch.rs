//! [`CairnQ::watch`]: a stream of signals about a set of queues, for
//! dashboards and autoscalers — a task became claimable, a task finished,
//! and a periodic tick as the fallback — built on the store's push channel
//! ([`Store::notifications`](crate::Store::notifications)).
//!
//! Signals only say when to look: a push channel may drop a notification
//! (a reconnect, another process's commit SQLite cannot name) and a
//! delayed task becoming due notifies nobody, so the tick keeps coming
//! whatever the store pushes, and a consumer that re-reads the store on
//! every signal never misses a change for longer than one tick.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{BoxStream, Fuse, Stream, StreamExt};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::{CairnQ, by_id};
use crate::error::{Error, Result, require_non_empty, require_text};
use crate::store::{Change, FeedParams, GetParams, Store};

/// The tick interval unless [`Watch::tick_every`] says otherwise.
const DEFAULT_TICK: Duration = Duration::from_secs(1);

/// One thing a [`Watch`] reports. Every signal means "look at the store":
/// what it names is a hint, the store is the truth.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Signal {
    /// A task became queued on `queue`: claimable now, or at its due time
    /// if it was submitted with a delay or is waiting out a retry backoff.
    Claimable {
        /// The queue, one of the watched ones.
        queue: String,
    },
    /// A task on one of the watched queues became terminal (succeeded,
    /// failed or canceled).
    Finished {
        /// The task.
        task_id: String,
    },
    /// Something may have changed that the store could not name (another
    /// process's commit on SQLite, a reconnect of Postgres's notification
    /// connection): read what you show again.
    Changed,
    /// The periodic tick: the fallback when nothing was pushed (a store
    /// without push wakeups, a task whose delay ran out).
    Tick,
}

/// A stream of [`Signal`]s about some queues, from [`CairnQ::watch`]. It
/// subscribes when made (a change committed between `watch` and the first
/// poll is still signalled) and never ends; dropping it withdraws the
/// subscription and stops the tick.
pub struct Watch {
    pushed: Fuse<BoxStream<'static, Signal>>,
    every: Duration,
    /// Made at the first poll, inside the runtime.
    ticks: Option<Interval>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("every", &self.every).finish_non_exhaustive()
    }
}

impl Watch {
    /// Ticks every `every` (default 1 s) instead; the first tick comes one
    /// interval after the first poll. Refuses a zero interval.
    pub fn tick_every(mut self, every: Duration) -> Result<Self> {
        if every.is_zero() {
            return Err(Error::validation("tick_every", "must be above zero"));
        }
        self.every = every;
        self.ticks = None;
        Ok(self)
    }
}

impl Stream for Watch {
    type Item = Signal;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Signal>> {
        let this = self.get_mut();
        if let Poll::Ready(Some(signal)) = this.pushed.poll_next_unpin(cx) {
            return Poll::Ready(Some(signal));
        }
        let every = this.every;
        let ticks = this.ticks.get_or_insert_with(|| {
            let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            ticks
        });
        ticks.poll_tick(cx).map(|_| Some(Signal::Tick))
    }
}

impl CairnQ {
    /// Watches `queues`: a [`Stream`] of [`Signal`]s — a task became
    /// claimable on one of them, a task on one of them finished, something
    /// changed that the store could not name, and a tick every second (see
    /// [`Watch::tick_every`]) whatever the store pushes. On a store without
    /// push wakeups only ticks come. Refuses an empty list, an empty queue
    /// name or one holding a NUL.
    ///
    /// A finished task whose queue the store's notification does not name
    /// (Postgres, some SQLite writes) costs one read of that row to filter.
    ///
    /// ```no_run
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use cairnq_core::Signal;
    ///
    /// let mut signals = client.watch(["images"])?.tick_every(Duration::from_secs(5))?;
    /// while let Some(signal) = signals.next().await {
    ///     match signal {
    ///         Signal::Claimable { queue } => println!("work waits on {queue}"),
    ///         Signal::Finished { task_id } => println!("{task_id} finished"),
    ///         _ => {} // a tick, or a change the store could not name
    ///     }
    ///     let stats = client.stats(Some("images")).await?; // look at the store
    ///     println!("images: {:?}", stats.get("images"));
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// A complete program: `cargo run -p cairnq-worker --example watch`.
    pub fn watch<I, S>(&self, queues: I) -> Result<Watch>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let queues: Vec<String> = queues.into_iter().map(Into::into).collect();
        if queues.is_empty() {
            return Err(Error::validation("queues", "watch at least one queue"));
        }
        for queue in &queues {
            require_non_empty("queues", queue)?;
            require_text("queues", queue)?;
        }
        let store = Arc::clone(&self.store);
        let feed = store.notifications().feed(&FeedParams::new(queues.clone()));
        let queues: Arc<[String]> = queues.into();
        let pushed = feed.filter_map(move |change| signal_for(Arc::clone(&store), Arc::clone(&queues), change));
        Ok(Watch { pushed: pushed.boxed().fuse(), every: DEFAULT_TICK, ticks: None })
    }
}

/// The signal a change means for a watch of `queues`, if any.
async fn signal_for(store: Arc<dyn Store>, queues: Arc<[String]>, change: Change) -> Option<Signal> {
    let watched = |queue: &str| queues.iter().any(|q| q == queue);
    match change {
        Change::Queued { queue } => watched(&queue).then_some(Signal::Claimable { queue }),
        Change::Finished { task_id, queue: Some(queue) } => watched(&queue).then_some(Signal::Finished { task_id }),
        Change::Finished { task_id, queue: None } => {
            let Ok(selector) = by_id(&task_id) else { return Some(Signal::Changed) };
            match store.get(&GetParams::new(selector)).await {
                Ok(Some(task)) => watched(&task.queue).then_some(Signal::Finished { task_id }),
                // Purged already: nothing left to show.
                Ok(None) => None,
                // Cannot tell which queue: say that something changed.
                Err(_) => Some(Signal::Changed),
            }
        }
        _ => Some(Signal::Changed),
    }
}
