//! Flow control: [`Limit`], how many tasks of one limit key may run at once
//! and how fast they may start, across every worker process on the
//! database. Limits are data (the `cairnq_ext_limits` table of extension
//! `ext_0006`), so every process reads the same ones and a change applies
//! to the next claim; this module holds the type and its validation, and
//! the claim enforces it ([`backend::admission`](crate::backend)).

use std::time::Duration;

use crate::error::{Error, Result, require_non_empty, require_text};
use crate::store::LimitRow;

/// The longest limit key, in bytes: a key names a tenant or an API, not
/// a document.
pub const MAX_LIMIT_KEY_LEN: usize = 200;

/// A bound on the tasks of one limit key: at most `concurrency` running at
/// once, and starts paced by a rate of `count` per `period` with a `burst`.
///
/// A task opts in with [`SubmitOptions::limit_key`](crate::SubmitOptions::limit_key)
/// (stored as the string `limit_key` in its metadata, which any SDK can
/// write); a task without one is never limited. Set a limit with
/// [`CairnQ::set_limit`](crate::CairnQ::set_limit):
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::Limit;
/// let per_tenant = Limit::new("tenant:*").concurrency(2);
/// let api = Limit::new("api:maps").concurrency(5).rate(100, Duration::from_secs(60)).burst(10);
/// assert!(per_tenant.validate().is_ok() && api.validate().is_ok());
/// assert!(Limit::new("tenant:42").validate().is_err(), "a limit bounds something");
/// ```
///
/// # Semantics
///
/// - **Which limit applies.** A limit's key is a task's limit key, or a
///   prefix ending in `*` that is a default for every key starting with
///   it, *each key separately*: `tenant:*` with concurrency 2 lets every
///   tenant run 2 at once, not 2 in total. For a task's key the exact limit
///   wins, else the longest matching prefix; one limit applies, never two.
/// - **Concurrency** is the number of the key's tasks `running` now,
///   counted from the task rows inside the claim transaction (never a
///   counter kept beside them). Lease expiry, cancel, a crash and retry all
///   free a slot by changing the row's status, so a slot cannot leak.
/// - **Rate** is a GCRA (generic cell rate algorithm) over one stored
///   theoretical arrival time per key: starts are spaced `period / count`
///   apart, and up to `burst` (default 1) may start at once after a quiet
///   spell. **Every start counts**, so a retry (or a requeue after a lease
///   expired) uses the rate like a first attempt.
/// - **Skipped, not waited on.** A claim passes over the tasks of a key at
///   its limit and takes the next tasks it may start, so a saturated key
///   never holds back other keys or unlimited tasks; priority order holds
///   among what may start.
/// - **Changes apply at once.** A limit may be set, changed or removed
///   while workers run; the next claim uses it. A lowered limit lets no new
///   task of the key start until the count is under it; running tasks are
///   never interrupted.
/// - **Enforced by cairnq-rs workers only.** The Python and TypeScript
///   SDKs do not know the limits table: their workers claim limited tasks
///   as if they had no key (and their running tasks still count against
///   the limit for ours). Work a limited queue with cairnq-rs workers;
///   producers in any SDK may set `limit_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limit {
    /// The limit key, or a prefix ending in `*`.
    pub key: String,
    /// At most this many of the key's tasks running at once.
    pub concurrency: Option<u32>,
    /// Starts paced to at most this many per period.
    pub rate: Option<Rate>,
    /// How many may start at once after a quiet spell (with a rate only;
    /// 1 when unset).
    pub burst: Option<u32>,
}

/// A rate: at most `count` starts per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rate {
    /// Starts per period (at least 1).
    pub count: u32,
    /// The period (at least 1 ms, whole milliseconds).
    pub period: Duration,
}

impl Rate {
    /// `count` starts per `period` (checked by [`Limit::validate`]).
    pub fn new(count: u32, period: Duration) -> Self {
        Self { count, period }
    }
}

/// A limit read back from the store, with when it was last set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitInfo {
    /// The limit.
    pub limit: Limit,
    /// When it was last set, in epoch milliseconds (the store's clock).
    pub updated_at_ms: i64,
}

/// A limit with what it governs now ([`CairnQ::limit_statuses`](crate::CairnQ::limit_statuses)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitStatus {
    /// The limit.
    pub info: LimitInfo,
    /// Tasks running now under it (of every key it applies to).
    pub running: u64,
    /// Tasks queued under it (due or not).
    pub waiting: u64,
    /// How many keys it applies to have tasks running or queued.
    pub keys: u64,
    /// With a rate: when it next lets a start through, in epoch ms by the
    /// store's clock (for a prefix default, the soonest of its keys with
    /// tasks waiting). `None` without a rate, or for a prefix default none
    /// of whose keys waits.
    pub next_admit_ms: Option<i64>,
}

impl Limit {
    /// A limit on `key` (a limit key, or a prefix ending in `*`) that bounds
    /// nothing yet: add a concurrency, a rate or both.
    pub fn new(key: impl Into<String>) -> Self {
        Self { key: key.into(), concurrency: None, rate: None, burst: None }
    }

    /// At most `n` of the key's tasks running at once (at least 1).
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// At most `count` starts per `period` (count at least 1, period at
    /// least 1 ms).
    pub fn rate(mut self, count: u32, period: Duration) -> Self {
        self.rate = Some(Rate::new(count, period));
        self
    }

    /// Up to `n` starts at once after a quiet spell (at least 1; needs a
    /// rate).
    pub fn burst(mut self, n: u32) -> Self {
        self.burst = Some(n);
        self
    }

    /// Whether this limit is a default for every key with its prefix.
    pub fn is_prefix(&self) -> bool {
        self.key.ends_with('*')
    }

    /// Whether this limit applies to tasks of `key` (exactly, or as a
    /// prefix default). Which of several applies: see the type's docs.
    pub fn matches(&self, key: &str) -> bool {
        match self.key.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => self.key == key,
        }
    }

    /// Refuses `key` as a limit's key (empty, too long, a NUL, or a `*`
    /// anywhere but at the end): what [`CairnQ::limit`](crate::CairnQ::limit)
    /// and [`remove_limit`](crate::CairnQ::remove_limit) check first.
    pub fn validate_key(key: &str) -> Result<()> {
        validate_key("key", key, KeyUse::Limit)
    }

    /// Refuses a limit that cannot be stored: a bad key, zero counts, a
    /// period under a millisecond, a burst without a rate, or nothing to
    /// bound.
    pub fn validate(&self) -> Result<()> {
        validate_key("key", &self.key, KeyUse::Limit)?;
        if self.concurrency == Some(0) {
            return Err(Error::validation("concurrency", "must be at least 1 (remove the limit to lift it)"));
        }
        if let Some(rate) = &self.rate {
            if rate.count == 0 {
                return Err(Error::validation("rate", "the count must be at least 1"));
            }
            let period_ms = rate.period.as_millis();
            if period_ms == 0 {
                return Err(Error::validation("rate", "the period must be at least 1 ms"));
            }
            if i64::try_from(period_ms).is_err() {
                return Err(Error::validation("rate", "the period is too long"));
            }
        }
        match (self.burst, &self.rate) {
            (Some(0), _) => return Err(Error::validation("burst", "must be at least 1")),
            (Some(_), None) => return Err(Error::validation("burst", "needs a rate")),
            _ => {}
        }
        if self.concurrency.is_none() && self.rate.is_none() {
            return Err(Error::validation("limit", "set a concurrency, a rate or both"));
        }
        Ok(())
    }

    /// The row the seam stores (validated first).
    pub(crate) fn to_row(&self) -> Result<LimitRow> {
        self.validate()?;
        let mut row = LimitRow::new(&self.key);
        row.concurrency = self.concurrency.map(i64::from);
        if let Some(rate) = &self.rate {
            row.rate_count = Some(i64::from(rate.count));
            row.rate_period_ms = i64::try_from(rate.period.as_millis()).ok();
            row.burst = Some(i64::from(self.burst.unwrap_or(1)));
        }
        Ok(row)
    }

    /// The limit a stored row holds; a row no version of this SDK wrote
    /// (a count out of range) is a corrupt row.
    pub(crate) fn from_row(row: &LimitRow) -> Result<LimitInfo> {
        let bad = |column: &str| Error::corrupt_row(format!("limit {:?}: {column} is out of range", row.key));
        let count = |column: &str, value: Option<i64>| {
            value.map(|n| u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| bad(column))).transpose()
        };
        let rate = match (count("rate_count", row.rate_count)?, row.rate_period_ms) {
            (Some(n), Some(ms)) if ms > 0 => Some(Rate::new(n, Duration::from_millis(ms.unsigned_abs()))),
            (None, None) => None,
            _ => return Err(bad("rate_period_ms")),
        };
        let limit = Limit {
            key: row.key.clone(),
            concurrency: count("concurrency", row.concurrency)?,
            burst: if rate.is_some() { count("burst", row.burst)? } else { None },
            rate,
        };
        Ok(LimitInfo { limit, updated_at_ms: row.updated_at_ms })
    }
}

impl crate::model::Task {
    /// The task's flow-control key: the string `limit_key` of its metadata
    /// (see [`SubmitOptions::limit_key`](crate::SubmitOptions::limit_key));
    /// a number another writer put there counts as its text, as the SQL
    /// backends read it. `None` when there is none, or for any other value
    /// (such a task is not limited).
    pub fn limit_key(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Metadata {
            limit_key: Option<serde_json::Value>,
        }
        match self.metadata.decode::<Metadata>().ok()?.limit_key? {
            serde_json::Value::String(key) => Some(key),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

impl LimitInfo {
    /// The limit among `limits` that applies to tasks of `key`: the exact
    /// one, else the longest matching prefix default (see [`Limit`]).
    ///
    /// ```no_run
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::{Limit, LimitInfo};
    /// client.set_limit(&Limit::new("t:*").concurrency(2)).await?;
    /// client.set_limit(&Limit::new("t:4*").concurrency(3)).await?;
    /// let limits = client.limits().await?;
    /// assert_eq!(LimitInfo::governing(&limits, "t:42").map(|l| l.limit.key.as_str()), Some("t:4*"));
    /// assert!(LimitInfo::governing(&limits, "u").is_none());
    /// # Ok(()) }
    /// ```
    pub fn governing<'a>(limits: &'a [LimitInfo], key: &str) -> Option<&'a LimitInfo> {
        let rows: Vec<LimitRow> = limits.iter().filter_map(|l| l.limit.to_row().ok()).collect();
        let stored = crate::backend::LimitBook::new(&rows).governing(key)?;
        limits.iter().find(|l| l.limit.key == stored)
    }
}

/// Where a limit key is used, for its validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// A task's key: no `*` anywhere.
    Task,
    /// A limit's key: a `*` only as its last character.
    Limit,
}

/// Refuses a limit key that is empty, too long, holds a NUL, or has a `*`
/// where `usage` allows none.
pub(crate) fn validate_key(field: &'static str, key: &str, usage: KeyUse) -> Result<()> {
    require_non_empty(field, key)?;
    require_text(field, key)?;
    if key.len() > MAX_LIMIT_KEY_LEN {
        return Err(Error::validation(field, format!("is {} bytes; at most {MAX_LIMIT_KEY_LEN}", key.len())));
    }
    let stars = key.matches('*').count();
    match usage {
        KeyUse::Task if stars > 0 => {
            Err(Error::validation(field, "a task's limit key cannot hold `*` (a `*` ends a limit's prefix)"))
        }
        KeyUse::Limit if stars > 1 || (stars == 1 && !key.ends_with('*')) => {
            Err(Error::validation(field, "`*` may only end a limit's key (a prefix default such as `tenant:*`)"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_governing_limit_is_the_exact_one_else_the_longest_prefix() {
        let infos: Vec<LimitInfo> = [Limit::new("t:*").concurrency(2), Limit::new("t:4*").concurrency(3)]
            .into_iter()
            .chain([Limit::new("t:42").concurrency(1)])
            .map(|l| Limit::from_row(&l.to_row().expect("a valid limit")).expect("reads back"))
            .collect();
        let governing = |key| LimitInfo::governing(&infos, key).map(|l| l.limit.key.as_str());
        assert_eq!(governing("t:42"), Some("t:42"));
        assert_eq!(governing("t:43"), Some("t:4*"));
        assert_eq!(governing("t:5"), Some("t:*"));
        assert_eq!(governing("u"), None);
    }

    #[test]
    fn bad_limits_are_refused_by_field() {
        let field = |limit: Limit| match limit.validate() {
            Err(Error::Validation { field, .. }) => field,
            other => panic!("expected a validation error, got {other:?}"),
        };
        assert_eq!(field(Limit::new("").concurrency(1)), "key");
        assert_eq!(field(Limit::new("a*b").concurrency(1)), "key");
        assert_eq!(field(Limit::new("a**").concurrency(1)), "key");
        assert_eq!(field(Limit::new("x".repeat(201)).concurrency(1)), "key");
        assert_eq!(field(Limit::new("k").concurrency(0)), "concurrency");
        assert_eq!(field(Limit::new("k").rate(0, Duration::from_secs(1))), "rate");
        assert_eq!(field(Limit::new("k").rate(1, Duration::from_micros(10))), "rate");
        assert_eq!(field(Limit::new("k").concurrency(1).burst(2)), "burst");
        assert_eq!(field(Limit::new("k").rate(1, Duration::from_secs(1)).burst(0)), "burst");
        assert_eq!(field(Limit::new("k")), "limit");
        assert!(Limit::new("*").concurrency(1).validate().is_ok());
    }

    #[test]
    fn a_row_round_trips() {
        let limit = Limit::new("tenant:*").concurrency(2).rate(100, Duration::from_secs(60)).burst(10);
        let mut row = limit.to_row().expect("valid");
        row.updated_at_ms = 7;
        let back = Limit::from_row(&row).expect("decodes");
        assert_eq!(back.limit, limit);
        let plain = Limit::new("k").rate(5, Duration::from_secs(1));
        assert_eq!(Limit::from_row(&plain.to_row().expect("valid")).expect("decodes").limit.burst, Some(1));
    }

    #[test]
    fn prefixes_match_by_start() {
        assert!(Limit::new("tenant:*").matches("tenant:42"));
        assert!(!Limit::new("tenant:*").matches("other"));
        assert!(Limit::new("*").matches("anything"));
        assert!(Limit::new("k").matches("k") && !Limit::new("k").matches("k2"));
    }
}
