//! Backpressure: a submit waits while its queue is full, then gives up with
//! [`Error::QueueFull`].
//!
//! It lives in core because both the API side ([`CairnQ`](crate::CairnQ)) and
//! handlers submitting children from inside a worker go through the same
//! client, so one gate throttles both. Headroom is read with
//! [`Store::count_queued`] (a bounded read); one read lets a producer take up
//! to [`SUBMITS_PER_READ`] submits before it asks again, so a busy producer
//! does not double its database traffic.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::store::{CountQueuedParams, Store};

/// How many submits one headroom read may admit.
pub(crate) const SUBMITS_PER_READ: u64 = 64;

/// First and largest sleep between headroom reads while a queue is full.
const FIRST_RECHECK: Duration = Duration::from_millis(25);
const LARGEST_RECHECK: Duration = Duration::from_millis(1_000);

/// Backpressure settings: a maximum queue depth per queue (queued rows,
/// delayed ones included) and how long a submit may wait for headroom.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::Backpressure;
/// let bp = Backpressure::new().queue("emails", 10_000).max_wait(Duration::from_secs(5));
/// assert_eq!(bp.max_depth("emails"), Some(10_000));
/// assert_eq!(bp.max_depth("other"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backpressure {
    depths: HashMap<String, u64>,
    any_queue: Option<u64>,
    max_wait: Duration,
}

impl Default for Backpressure {
    /// No limit on any queue; a max wait of 600 s.
    fn default() -> Self {
        Self { depths: HashMap::new(), any_queue: None, max_wait: Duration::from_millis(600_000) }
    }
}

impl Backpressure {
    /// No limits yet, max wait 600 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits `queue` to `max_depth` queued rows.
    pub fn queue(mut self, queue: impl Into<String>, max_depth: u64) -> Self {
        self.depths.insert(queue.into(), max_depth);
        self
    }

    /// Limits every queue without its own limit to `max_depth` queued rows.
    pub fn every_queue(mut self, max_depth: u64) -> Self {
        self.any_queue = Some(max_depth);
        self
    }

    /// How long a submit waits for headroom before [`Error::QueueFull`].
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// The depth limit of `queue`, if it has one.
    pub fn max_depth(&self, queue: &str) -> Option<u64> {
        self.depths.get(queue).copied().or(self.any_queue)
    }
}

/// The gate a client passes every submit through. Shared by the clones of
/// one client, so the submits admitted by one headroom read are shared too.
#[derive(Debug)]
pub struct BackpressureGate {
    settings: Backpressure,
    /// Submits still admitted by the last headroom read, per queue.
    admitted: Mutex<HashMap<String, u64>>,
}

impl BackpressureGate {
    /// A gate with these settings.
    pub fn new(settings: Backpressure) -> Self {
        Self { settings, admitted: Mutex::new(HashMap::new()) }
    }

    /// The settings.
    pub fn settings(&self) -> &Backpressure {
        &self.settings
    }

    /// Waits until `queue` has headroom for one more submit, or fails with
    /// [`Error::QueueFull`] once the max wait has passed.
    pub async fn admit(&self, store: &dyn Store, queue: &str) -> Result<()> {
        let Some(max_depth) = self.settings.max_depth(queue) else { return Ok(()) };
        let started = Instant::now();
        let mut recheck = FIRST_RECHECK;
        loop {
            if self.take_admitted(queue) {
                return Ok(());
            }
            let queued = store.count_queued(&CountQueuedParams::new(queue, max_depth)).await?;
            let headroom = max_depth.saturating_sub(queued).min(SUBMITS_PER_READ);
            if headroom > 0 {
                self.admitted.lock().insert(queue.to_string(), headroom - 1);
                return Ok(());
            }
            let waited = started.elapsed();
            if waited >= self.settings.max_wait {
                return Err(Error::QueueFull { queue: queue.to_string(), max_depth, waited });
            }
            tokio::time::sleep(recheck.min(self.settings.max_wait - waited)).await;
            recheck = (recheck * 2).min(LARGEST_RECHECK);
        }
    }

    fn take_admitted(&self, queue: &str) -> bool {
        let mut admitted = self.admitted.lock();
        match admitted.get_mut(queue) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }
}
