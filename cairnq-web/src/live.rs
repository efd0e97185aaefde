//! Live updates: one hub per dashboard watches the queues through
//! [`CairnQ::watch`] (the store's push wakeups, with its tick as the
//! polling fallback) and tells every open page over server-sent events
//! that something changed; the page script then re-reads its page. The hub
//! also samples the finished-task count, which the overview's throughput
//! chart is drawn from.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Weak};
use std::time::Duration;

use cairnq_core::{CairnQ, Signal, Stats};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::time::now_ms;

/// How often the hub's watch ticks when the store pushes nothing.
const TICK: Duration = Duration::from_secs(1);
/// The least time between two change events (a busy queue signals often).
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
    samples: Mutex<VecDeque<Sample>>,
    started: Mutex<bool>,
    closed: watch::Sender<bool>,
}

impl Hub {
    pub(crate) fn new(client: CairnQ) -> Self {
        let (changes, _) = broadcast::channel(16);
        let (closed, _) = watch::channel(false);
        let inner =
            HubInner { client, changes, samples: Mutex::new(VecDeque::new()), started: Mutex::new(false), closed };
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

    /// Records a reading taken elsewhere (the overview reads stats anyway).
    pub(crate) fn record(&self, stats: &Stats) {
        self.inner.record(stats);
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
    fn record(&self, stats: &Stats) {
        let finished = stats.values().map(|c| c.succeeded + c.failed + c.canceled).sum();
        let at_ms = now_ms();
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

/// The hub's loop: watch the queues there are, tell subscribers of every
/// pushed signal (at most one event per [`SETTLE`]; one held back goes out
/// with the next tick) and, without pushes, every [`POLL_EVERY`]; sample
/// every [`SAMPLE_EVERY`], and re-watch when the set of queues changes.
async fn run(hub: Weak<HubInner>) {
    let mut version = 0u64;
    loop {
        let Some(inner) = hub.upgrade() else { return };
        let queues = match inner.client.stats(None).await {
            Ok(stats) => {
                inner.record(&stats);
                queue_set(&stats)
            }
            Err(_) => {
                drop(inner);
                tokio::time::sleep(SAMPLE_EVERY).await;
                continue;
            }
        };
        let watched = inner.client.watch(queues.iter().cloned()).and_then(|w| w.tick_every(TICK));
        let Ok(mut signals) = watched else { return };
        drop(inner);
        let mut last_sample = Instant::now();
        let mut last_sent = Instant::now() - SETTLE;
        let mut held_back = false;
        while let Some(signal) = signals.next().await {
            let Some(inner) = hub.upgrade() else { return };
            let due = match signal {
                Signal::Tick => held_back || last_sent.elapsed() >= POLL_EVERY,
                _ => last_sent.elapsed() >= SETTLE,
            };
            if due {
                version += 1;
                // No subscriber is fine: nothing to tell.
                let _ = inner.changes.send(version);
                last_sent = Instant::now();
            }
            held_back = !due && (held_back || signal != Signal::Tick);
            if last_sample.elapsed() >= SAMPLE_EVERY {
                last_sample = Instant::now();
                if let Ok(stats) = inner.client.stats(None).await {
                    inner.record(&stats);
                    if queue_set(&stats) != queues {
                        break;
                    }
                }
            }
        }
    }
}

/// The queues to watch: every queue with rows, or `default` before there are any.
fn queue_set(stats: &Stats) -> BTreeSet<String> {
    let mut queues: BTreeSet<String> = stats.keys().cloned().collect();
    if queues.is_empty() {
        queues.insert("default".to_string());
    }
    queues
}
