//! The queue gauges (`cairnq_queue_depth{queue,status}`,
//! `cairnq_queue_oldest_age_seconds{queue}`) and the limit gauge
//! (`cairnq_limit_running{key}`), read from the store by one cached
//! collector per store: however many workers and dashboards of a process
//! share a store, it is read (two grouped statements, and the limits with
//! their running counts where any limit is set) at most once per interval,
//! so a scrape every second or twenty workers cost the same, and a second
//! store (another database) keeps its own turn.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::CairnQ;
use crate::error::{ErrorKind, Result};
use crate::observe::{LIMIT_RUNNING, Outage, QUEUE_DEPTH, QUEUE_OLDEST_AGE};
use crate::store::Store;
use crate::{LimitStatus, TaskStatus};

/// How often the queue gauges are read by default.
pub const DEFAULT_GAUGE_INTERVAL: Duration = Duration::from_secs(10);

/// When each store's gauges were last read, by store, and the limit keys
/// that read set a gauge for (so a removed limit's gauge reads 0, not its
/// last count). The store is known by its `Arc` (every client and worker
/// over it holds the same one): the `Weak` keeps that allocation, so no
/// other store can take its address while the entry lives, and an entry
/// whose store is gone is dropped.
static LAST_READ: Mutex<Vec<Turn>> = Mutex::new(Vec::new());

/// One store's entry in [`LAST_READ`].
struct Turn {
    store: Weak<dyn Store>,
    at: Instant,
    limit_keys: Vec<String>,
}

/// The collector of the queue gauges for one client.
///
/// ```no_run
/// # async fn demo(client: cairnq_core::CairnQ) {
/// use cairnq_core::QueueGauges;
/// let collector = QueueGauges::new(client).spawn(); // reads now, then every 10 s
/// # drop(collector); }
/// ```
#[derive(Debug, Clone)]
pub struct QueueGauges {
    client: CairnQ,
    interval: Duration,
}

impl QueueGauges {
    /// A collector reading every [`DEFAULT_GAUGE_INTERVAL`].
    pub fn new(client: CairnQ) -> Self {
        Self { client, interval: DEFAULT_GAUGE_INTERVAL }
    }

    /// Reads at most once per `interval` (per store, in this process).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Reads the counts and sets the gauges, unless some collector of this
    /// process read the same store less than an interval ago (then
    /// `Ok(false)`).
    pub async fn collect(&self) -> Result<bool> {
        if !self.take_turn() {
            return Ok(false);
        }
        let stats = self.client.stats(None).await?;
        let ages = self.client.oldest_due(None).await?;
        for (queue, counts) in &stats {
            for status in TaskStatus::ALL {
                let depth = counts.get(status) as f64;
                metrics::gauge!(QUEUE_DEPTH, "queue" => queue.clone(), "status" => status.as_str()).set(depth);
            }
            // A queue with nothing due reads 0, not its last age.
            let age = ages.iter().find(|a| &a.queue == queue).map_or(Duration::ZERO, |a| a.age);
            metrics::gauge!(QUEUE_OLDEST_AGE, "queue" => queue.clone()).set(age.as_secs_f64());
        }
        match self.client.limit_statuses().await {
            Ok(statuses) => self.set_limit_gauges(&statuses),
            Err(error) if error.is_unreachable() => return Err(error),
            // A backend without flow control, or a database without the
            // limits table (installed by another SDK and opened as it
            // is): no limit gauges, and the queue gauges stand.
            Err(error) => {
                if error.kind() != ErrorKind::UnsupportedBackend {
                    tracing::debug!(%error, "cairnq queue gauges: no limit gauges");
                }
            }
        }
        Ok(true)
    }

    /// Sets `cairnq_limit_running` for every limit, and to 0 for the
    /// limits the last read saw that are gone.
    fn set_limit_gauges(&self, statuses: &[LimitStatus]) {
        for status in statuses {
            metrics::gauge!(LIMIT_RUNNING, "key" => status.info.limit.key.clone()).set(status.running as f64);
        }
        let keys: Vec<String> = statuses.iter().map(|s| s.info.limit.key.clone()).collect();
        let store = Arc::downgrade(self.client.store());
        let gone: Vec<String> = {
            let mut reads = LAST_READ.lock();
            let Some(turn) = reads.iter_mut().find(|turn| turn.store.ptr_eq(&store)) else { return };
            let before = std::mem::replace(&mut turn.limit_keys, keys.clone());
            before.into_iter().filter(|key| !keys.contains(key)).collect()
        };
        for key in gone {
            metrics::gauge!(LIMIT_RUNNING, "key" => key).set(0.0);
        }
    }

    fn take_turn(&self) -> bool {
        let store = Arc::downgrade(self.client.store());
        let mut reads = LAST_READ.lock();
        reads.retain(|turn| turn.store.strong_count() > 0);
        let now = Instant::now();
        match reads.iter_mut().find(|turn| turn.store.ptr_eq(&store)) {
            Some(turn) if now.duration_since(turn.at) < self.interval => false,
            Some(turn) => {
                turn.at = now;
                true
            }
            None => {
                reads.push(Turn { store, at: now, limit_keys: Vec::new() });
                true
            }
        }
    }

    /// Collects now and then every interval, on the current tokio runtime,
    /// until the handle is dropped. A failed read is logged and retried at
    /// the next interval.
    pub fn spawn(self) -> GaugeHandle {
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(self.interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                // An outage is told once per store and process, whoever
                // meets it first, not by every failed read.
                let outage = Outage::of(self.client.store());
                match self.collect().await {
                    // Another collector's turn: no call was made.
                    Ok(false) => {}
                    Ok(true) => {
                        if let Some(news) = outage.reached() {
                            tracing::info!("cairnq queue gauges: {}", outage.describe(news, None));
                        }
                    }
                    Err(error) if error.is_unreachable() => {
                        if let Some(news) = outage.failed(&error) {
                            tracing::warn!(error.kind = ?error.kind(), "cairnq queue gauges: {}", outage.describe(news, Some(&error)));
                        }
                    }
                    Err(error) => {
                        tracing::warn!(error.kind = ?error.kind(), %error, "cairnq queue gauges: the read failed")
                    }
                }
            }
        });
        GaugeHandle(Arc::new(task.abort_handle()))
    }
}

/// Stops its collector when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct GaugeHandle(Arc<tokio::task::AbortHandle>);

impl Drop for GaugeHandle {
    fn drop(&mut self) {
        if Arc::strong_count(&self.0) == 1 {
            self.0.abort();
        }
    }
}
