//! The parameters and row of the flow-control operations of the seam
//! (extension `ext_0006_limits`): a limit as the store holds it, in
//! integer milliseconds. Applications use [`Limit`](crate::Limit); the
//! client converts, validated, before anything is written.

use std::time::Instant;

/// One row of `cairnq_ext_limits`: a limit as stored. A `None` column
/// bounds nothing of its kind; `rate_count`, `rate_period_ms` and `burst`
/// are set together.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitRow {
    /// A task's limit key, or a prefix ending in `*`.
    pub key: String,
    /// Most running at once.
    pub concurrency: Option<i64>,
    /// Starts per period.
    pub rate_count: Option<i64>,
    /// The rate's period in milliseconds.
    pub rate_period_ms: Option<i64>,
    /// Starts allowed at once after a quiet spell.
    pub burst: Option<i64>,
    /// When the row was last written (the store's clock; ignored on write).
    pub updated_at_ms: i64,
}

impl LimitRow {
    /// A row for `key` bounding nothing yet.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            concurrency: None,
            rate_count: None,
            rate_period_ms: None,
            burst: None,
            updated_at_ms: 0,
        }
    }
}

/// Create or replace one limit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetLimitParams {
    /// The row to store (its `updated_at_ms` is the store's now).
    pub row: LimitRow,
}

impl SetLimitParams {
    /// Stores `row`.
    pub fn new(row: LimitRow) -> Self {
        Self { row }
    }
}

/// Delete one limit (by its exact key: removing `tenant:*` removes that
/// default, not the limits of keys it matched).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoveLimitParams {
    /// The limit's key.
    pub key: String,
}

impl RemoveLimitParams {
    /// Removes the limit stored under `key`.
    pub fn new(key: impl Into<String>) -> Self {
        Self { key: key.into() }
    }
}

/// Which limits to read: all (the default), or the one stored under a key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitsQuery {
    /// Only the limit stored under this exact key.
    pub key: Option<String>,
}

impl LimitsQuery {
    /// Every limit, by key.
    pub fn all() -> Self {
        Self::default()
    }

    /// The limit stored under `key` (none or one row).
    pub fn key(key: impl Into<String>) -> Self {
        Self { key: Some(key.into()) }
    }
}

/// Ask for the flow-control usage of every limit key with running or
/// queued tasks ([`Store::limit_usage`](crate::Store::limit_usage)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitUsageParams {}

impl LimitUsageParams {
    /// Every key.
    pub fn new() -> Self {
        Self::default()
    }
}

/// One limit key's tasks and rate state now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyUsage {
    /// The task's limit key (as text).
    pub key: String,
    /// Its rows running now.
    pub running: u64,
    /// Its rows queued now (due or not).
    pub waiting: u64,
    /// Its stored theoretical arrival time, when one can still hold a start
    /// back.
    pub tat_ms: Option<i64>,
}

impl KeyUsage {
    /// A key with nothing running or waiting and no rate state.
    pub fn new(key: impl Into<String>) -> Self {
        Self { key: key.into(), running: 0, waiting: 0, tat_ms: None }
    }
}

/// What [`Store::limit_usage`](crate::Store::limit_usage) read, with the
/// store's now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitUsage {
    /// The store's clock when read.
    pub now_ms: i64,
    /// Every key with running or queued tasks, or rate state, by key.
    pub keys: Vec<KeyUsage>,
}

impl LimitUsage {
    /// Usage read at `now_ms`.
    pub fn new(now_ms: i64, keys: Vec<KeyUsage>) -> Self {
        Self { now_ms, keys }
    }
}

/// Ask how long until a rate limit next admits a start
/// ([`Store::limit_wait`](crate::Store::limit_wait)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitWaitParams {
    /// When the claim that found nothing began (`None`: now). The keys a
    /// rate held back then count, even when their rate has opened by the
    /// time the store reads its clock: their wait is then zero, "claim
    /// again now". Without it, a rate opening between an empty claim and
    /// this read would give no wait at all, and a worker without push
    /// wakeups would sleep a whole poll.
    pub since: Option<Instant>,
}

impl LimitWaitParams {
    /// Over every key, from now.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the keys a rate held back at `claim_began` (see
    /// [`since`](Self::since)).
    pub fn since(mut self, claim_began: Instant) -> Self {
        self.since = Some(claim_began);
        self
    }

    /// [`since`](Self::since) on the store's clock, given the store's
    /// `now_ms` read just now: `now_ms` less the time passed since then
    /// (never later than `now_ms`).
    pub fn since_ms(&self, now_ms: i64) -> i64 {
        let passed = self.since.map_or(0, |at| i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX));
        now_ms.saturating_sub(passed)
    }
}
