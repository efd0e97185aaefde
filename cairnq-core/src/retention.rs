//! Retention: terminal tasks are purged by rules, in bounded batches, on an
//! interval, for as long as the client that owns the sweeper is open.
//!
//! It lives in core so an API process and a worker process can both run it
//! over any backend: every rule is a [`PurgeFilter`] (queue, status, name and
//! its own age cutoff, `PurgeFilter::older_than`) executed through [`Store::purge`], which
//! deletes at most `limit` rows per call, so a sweep never holds the write
//! lock for long.
//!
//! Defaults and behaviour match the Python SDK 0.15.1's `Retention`: a
//! sweep every hour, 1000 rows per purge statement, the first sweep one
//! interval after the sweeper starts (a process that restarts often must
//! not purge on every boot, when the store is busiest), each sweep draining
//! its rules' backlog in bounded statements with a yield between them, and
//! no rule at all refused. Differences, on purpose: a rule is a
//! [`PurgeFilter`] (the same filters as Python's `RetentionRule`), a
//! stopped sweeper abandons a purge in flight instead of waiting for it
//! (each purge is one atomic statement), and the hook of
//! [`Sweeper::spawn`] takes the place of Python's `on_error`.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::TaskStatus;
use crate::store::PurgeFilter;
use crate::store::Store;

/// Rows one purge call deletes at most, unless a rule says otherwise (the
/// Python SDK's `DEFAULT_LIMIT`, and `PurgeFilter`'s default).
const DEFAULT_BATCH: u32 = 1_000;
/// How often the background sweeper runs unless told otherwise (the Python
/// SDK's `DEFAULT_INTERVAL_MS`): a day of retention then never carries more
/// than an hour of extra rows, and the sweep is invisible next to the task
/// traffic.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(3_600);

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
    /// No rules yet, swept every hour.
    fn default() -> Self {
        Self { rules: Vec::new(), interval: DEFAULT_INTERVAL }
    }
}

impl Retention {
    /// No rules yet; sweeps every hour (add at least one rule).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule: purge what `filter` matches (its `older_than` age is the
    /// cutoff, its `limit` the rows per purge statement; the default
    /// filter's 1000 is used as given).
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

    /// How often the background sweeper runs (default: every hour).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The rules, in the order they are swept.
    pub fn rules(&self) -> &[PurgeFilter] {
        &self.rules
    }

    /// Validates every rule (no rule at all, a non-terminal status, a
    /// negative age or a zero limit is refused: a retention that purges
    /// nothing is almost certainly a mistake) and returns a sweeper for
    /// `store`.
    pub fn sweeper(&self, store: Arc<dyn Store>) -> Result<Sweeper> {
        if self.rules.is_empty() {
            return Err(Error::validation("rules", "name at least one rule (what may be purged, and when)"));
        }
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
    /// One sweep: each rule in turn, one purge statement after another
    /// (yielding to the runtime between them) until one comes back short,
    /// so a backlog drains as a run of short writes rather than one long
    /// one. Returns how many rows were deleted. Call it to drain on demand
    /// (after a backfill, from a maintenance command).
    pub async fn sweep_once(&self) -> Result<usize> {
        let mut deleted = 0;
        for rule in &self.rules {
            loop {
                let ids = self.store.purge(rule).await?;
                deleted += ids.len();
                if i64::try_from(ids.len()).unwrap_or(i64::MAX) < rule.limit {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(deleted)
    }

    /// Sweeps every interval, the first one interval from now, until the
    /// returned handle is dropped or stopped. A failed sweep is passed to
    /// `on_error` and the next runs on schedule. Must be called inside a
    /// tokio runtime.
    pub fn spawn(self, on_error: impl Fn(Error) + Send + Sync + 'static) -> SweeperHandle {
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(self.interval).await;
                if let Err(e) = self.sweep_once().await {
                    on_error(e);
                }
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

#[cfg(test)]
mod tests {
    //! The defaults the other SDKs share.

    use super::*;

    #[test]
    fn defaults_match_the_python_sdk() {
        let retention = Retention::new().succeeded(Duration::from_secs(60));
        assert_eq!(retention.interval, Duration::from_secs(3_600), "DEFAULT_INTERVAL_MS");
        assert_eq!(retention.rules()[0].limit, 1_000, "DEFAULT_LIMIT");
        assert_eq!(PurgeFilter::new().limit, 1_000);
    }
}
