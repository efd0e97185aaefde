//! Live updates: one hub per dashboard follows the store's change feed
//! ([`Store::notifications`](cairnq_core::Store::notifications): push wakeups,
//! every queue's, so a task another process puts on a queue nobody has
//! seen yet shows at once), with a periodic tick as the polling fallback,
//! and tells every open page over server-sent events that something
//! changed; the page script then re-reads its page. The hub also keeps the
//! shared [`Snapshot`] those re-reads are served from, and samples the
//! finished-task count the overview's throughput chart is drawn from.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use cairnq_core::store::{ChangeFeed, FeedParams};
use cairnq_core::{CairnQ, Result, Stats, now_ms};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::time::{Instant, MissedTickBehavior};

use crate::snapshot::{Snapshot, SnapshotCache};

/// How often the hub looks at its clock when the store pushes nothing.
const TICK: Duration = Duration::from_secs(1);
/// The least time between two change events (a busy queue signals often):
/// a change within it is told when it ends.
const SETTLE: Duration = Duration::from_millis(250);
/// How often the polling fallback says "look again" when nothing was
/// pushed (a delayed task coming due, a store without push wakeups).
const POLL_EVERY: Duration = Duration::from_secs(5);
/// How often the finished-task count is sampled (and the queue set re-read).
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// How much sampled history is kept: the chart's hour and a minute more.
const HISTORY_MS: i64 = 61 * 60_000;

/// One reading of how many tasks have finished, all queues together.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) at_ms: i64,
    pub(crate) finished: u64,
}

/// The live-update hub of one dashboard.
pub(crate) struct Hub {
    inner: Arc<HubInner>,
}

struct HubInner {
    client: CairnQ,
    changes: broadcast::Sender<u64>,
    /// The number of the latest change event (0 before the first).
    version: AtomicU64,
    snapshot: SnapshotCache,
    samples: Mutex<VecDeque<Sample>>,
    started: Mutex<bool>,
    closed: watch::Sender<bool>,
}

impl Hub {
    pub(crate) fn new(client: CairnQ) -> Self {
        let (changes, _) = broadcast::channel(16);
        let (closed, _) = watch::channel(false);
        let inner = HubInner {
            client,
            changes,
            version: AtomicU64::new(0),
            snapshot: SnapshotCache::default(),
            samples: Mutex::new(VecDeque::new()),
            started: Mutex::new(false),
            closed,
        };
        Self { inner: Arc::new(inner) }
    }

    /// Starts the watch loop on first use (inside the runtime that serves);
    /// it ends when the dashboard is dropped.
    pub(crate) fn ensure_started(&self) {
        let mut started = self.inner.started.lock();
        if !*started {
            *started = true;
            tokio::spawn(run(Arc::downgrade(&self.inner)));
        }
    }

    /// The queues as of the latest change event: one shared store read
    /// per change, however many pages ask (see [`SnapshotCache`]).
    pub(crate) async fn snapshot(&self) -> Result<Arc<Snapshot>> {
        self.ensure_started();
        let version = self.inner.version.load(Ordering::SeqCst);
        let snapshot = self.inner.snapshot.get(version, &self.inner.client).await?;
        // At the time it was read: a cached reading recorded again is then
        // no new sample, and never one dated later than its counts.
        self.inner.record(&snapshot.stats, snapshot.read_at_ms);
        Ok(snapshot)
    }

    /// The samples of the last hour, oldest first.
    pub(crate) fn samples(&self) -> Vec<Sample> {
        self.inner.samples.lock().iter().copied().collect()
    }

    /// Change numbers, one each time the queues may have changed, until the
    /// dashboard closes. A subscriber that falls behind gets the latest.
    pub(crate) fn changes(&self) -> impl Stream<Item = u64> + Send + use<> {
        self.ensure_started();
        let changes = self.inner.changes.subscribe();
        let closed = self.inner.closed.subscribe();
        futures::stream::unfold((changes, closed), |(mut changes, mut closed)| async move {
            loop {
                if *closed.borrow() {
                    return None;
                }
                tokio::select! {
                    received = changes.recv() => match received {
                        Ok(version) => return Some((version, (changes, closed))),
                        // Missed some: the next one says the same.
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    _ = closed.changed() => return None,
                }
            }
        })
    }

    /// Ends the open event streams.
    pub(crate) fn close(&self) {
        self.inner.closed.send_replace(true);
    }
}

impl HubInner {
    /// Tells every open page that something changed (no page open is
    /// fine: nobody to tell). The number moves first, so a page reading
    /// after the event never gets a snapshot from before it.
    fn announce(&self) {
        let version = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = self.changes.send(version);
    }

    /// Keeps the finished count of `stats`, read at `at_ms`, as a sample.
    fn record(&self, stats: &Stats, at_ms: i64) {
        let finished = stats.values().map(|c| c.succeeded + c.failed + c.canceled).sum();
        let mut samples = self.samples.lock();
        if samples.back().is_some_and(|last| at_ms - last.at_ms < 1000) {
            // Page loads read stats too; one sample a second is plenty.
            return;
        }
        samples.push_back(Sample { at_ms, finished });
        while samples.front().is_some_and(|s| s.at_ms < at_ms - HISTORY_MS) {
            samples.pop_front();
        }
    }
}

/// The hub's loop: follow the store's change feed, tell subscribers of
/// every change (at most one event per [`SETTLE`]; one held back goes out
/// when it ends) and, without changes, every [`POLL_EVERY`]; sample every
/// [`SAMPLE_EVERY`], and subscribe again when the set of queues changes (a
/// store may feed only the queues named).
async fn run(hub: Weak<HubInner>) {
    loop {
        let Some(inner) = hub.upgrade() else { return };
        let queues = match inner.client.stats(None).await {
            Ok(stats) => {
                inner.record(&stats, now_ms());
                queue_set(&stats)
            }
            Err(_) => {
                drop(inner);
                tokio::time::sleep(SAMPLE_EVERY).await;
                continue;
            }
        };
        let feed = inner.client.change_feed(&FeedParams::new(queues.iter().cloned().collect()));
        drop(inner);
        if !follow(&hub, feed, &queues).await {
            return;
        }
    }
}

/// Follows one subscription until the queue set changes (`true`) or the
/// dashboard is gone (`false`).
async fn follow(hub: &Weak<HubInner>, mut feed: ChangeFeed, queues: &BTreeSet<String>) -> bool {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last_sent = Instant::now();
    let mut last_sample = Instant::now();
    let mut held_back: Option<Instant> = None;
    loop {
        let due_at = held_back.unwrap_or_else(|| Instant::now() + POLL_EVERY);
        let pushed = tokio::select! {
            change = feed.next() => match change {
                Some(_) => true,
                // A feed that ended pushes nothing more: the tick polls.
                None => {
                    feed = Box::pin(futures::stream::pending());
                    false
                }
            },
            _ = ticks.tick() => false,
            _ = tokio::time::sleep_until(due_at), if held_back.is_some() => false,
        };
        let Some(inner) = hub.upgrade() else { return false };
        let now = Instant::now();
        let settled = now.duration_since(last_sent) >= SETTLE;
        if pushed && !settled {
            held_back = held_back.or(Some(last_sent + SETTLE));
        } else if pushed || held_back.is_some_and(|at| at <= now) || now.duration_since(last_sent) >= POLL_EVERY {
            inner.announce();
            last_sent = now;
            held_back = None;
        }
        if now.duration_since(last_sample) >= SAMPLE_EVERY {
            last_sample = now;
            if let Ok(stats) = inner.client.stats(None).await {
                inner.record(&stats, now_ms());
                if queue_set(&stats) != *queues {
                    return true;
                }
            }
        }
    }
}

/// The queues to subscribe for: every queue with rows, or `default` before
/// there are any.
fn queue_set(stats: &Stats) -> BTreeSet<String> {
    let mut queues: BTreeSet<String> = stats.keys().cloned().collect();
    if queues.is_empty() {
        queues.insert("default".to_string());
    }
    queues
}
