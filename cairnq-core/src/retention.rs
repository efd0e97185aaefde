//! Retention: terminal tasks are purged by rules, in bounded batches, on an
//! interval, for as long as the client that owns the sweeper is open.
//!
//! It lives in core so an API process and a worker process can both run it
//! over any backend: every rule is a [`PurgeFilter`] (queue, status, name and
//! its own `older_than_ms` cutoff) executed through [`Store::purge`], which
//! deletes at most `limit` rows per call, so a sweep never holds the write
//! lock for long.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::TaskStatus;
use crate::store::PurgeFilter;
use crate::store::Store;

/// Rows one purge call deletes at most, unless a rule says otherwise.
const DEFAULT_BATCH: u32 = 500;
/// Purge calls one rule may make per sweep, so one sweep stays bounded even
/// when a large backlog has aged out at once; the rest waits a sweep.
const BATCHES_PER_SWEEP: usize = 20;

/// What to keep and for how long.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::{PurgeFilter, Retention, TaskStatus};
/// let retention = Retention::new()
///     .succeeded(Duration::from_secs(3600))
///     .failed(Duration::from_secs(7 * 86_400))
///     .rule(PurgeFilter::new().queue("reports").older_than(Duration::from_millis(60_000)))
///     .interval(Duration::from_secs(60));
/// assert_eq!(retention.rules().len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    rules: Vec<PurgeFilter>,
    interval: Duration,
}

impl Default for Retention {
    /// No rules, swept every 60 s.
    fn default() -> Self {
        Self { rules: Vec::new(), interval: Duration::from_secs(60) }
    }
}

impl Retention {
    /// No rules yet; sweeps every 60 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule: purge what `filter` matches (its `older_than_ms` is the
    /// cutoff, its `limit` the batch size; the default filter's 1000 is used
    /// as given).
    pub fn rule(mut self, filter: PurgeFilter) -> Self {
        self.rules.push(filter);
        self
    }

    /// Purges succeeded tasks completed more than `keep` ago.
    pub fn succeeded(self, keep: Duration) -> Self {
        self.status(TaskStatus::Succeeded, keep)
    }

    /// Purges failed tasks completed more than `keep` ago.
    pub fn failed(self, keep: Duration) -> Self {
        self.status(TaskStatus::Failed, keep)
    }

    /// Purges canceled tasks completed more than `keep` ago.
    pub fn canceled(self, keep: Duration) -> Self {
        self.status(TaskStatus::Canceled, keep)
    }

    fn status(self, status: TaskStatus, keep: Duration) -> Self {
        self.rule(PurgeFilter::new().status(status).older_than(keep).limit(DEFAULT_BATCH))
    }

    /// How often the background sweeper runs.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The rules, in the order they are swept.
    pub fn rules(&self) -> &[PurgeFilter] {
        &self.rules
    }

    /// Validates every rule (a non-terminal status, a negative age or a zero
    /// limit is refused) and returns a sweeper for `store`.
    pub fn sweeper(&self, store: Arc<dyn Store>) -> Result<Sweeper> {
        if self.interval.is_zero() {
            return Err(Error::validation("interval", "must be above zero"));
        }
        for rule in &self.rules {
            rule.validate()?;
        }
        let rules = self.rules.clone();
        Ok(Sweeper { store, rules, interval: self.interval })
    }
}

/// Runs [`Retention`] rules against one store.
pub struct Sweeper {
    store: Arc<dyn Store>,
    rules: Vec<PurgeFilter>,
    interval: Duration,
}

impl std::fmt::Debug for Sweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sweeper").field("rules", &self.rules).field("interval", &self.interval).finish()
    }
}

impl Sweeper {
    /// One sweep: each rule in turn, in batches, until a batch comes back
    /// short or the rule used its batches for this sweep. Returns how many
    /// rows were deleted.
    pub async fn sweep_once(&self) -> Result<usize> {
        let mut deleted = 0;
        for rule in &self.rules {
            for _ in 0..BATCHES_PER_SWEEP {
                let ids = self.store.purge(rule).await?;
                deleted += ids.len();
                if i64::try_from(ids.len()).unwrap_or(i64::MAX) < rule.limit {
                    break;
                }
            }
        }
        Ok(deleted)
    }

    /// Sweeps now and then every interval, until the returned handle is
    /// dropped or stopped. A failed sweep is passed to `on_error` and the
    /// sweeper carries on. Must be called inside a tokio runtime.
    pub fn spawn(self, on_error: impl Fn(Error) + Send + Sync + 'static) -> SweeperHandle {
        let task = tokio::spawn(async move {
            loop {
                if let Err(e) = self.sweep_once().await {
                    on_error(e);
                }
                tokio::time::sleep(self.interval).await;
            }
        });
        SweeperHandle { task }
    }
}

/// A running sweeper; dropping it stops the sweeps.
#[derive(Debug)]
pub struct SweeperHandle {
    task: tokio::task::JoinHandle<()>,
}

impl SweeperHandle {
    /// Stops the sweeper (a purge in flight is abandoned; it is atomic).
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for SweeperHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
