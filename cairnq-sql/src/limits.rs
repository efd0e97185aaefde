//! Flow control over an [`Executor`]: the limit operations of the seam
//! (limit rows are typed rows; a row holding a task's limit key, a JSON
//! value, comes as one JSON object in a text column, decoded here) and the limit-aware draws of a
//! claim, which [`flows::claim_with`](super::flows::claim_with) runs when
//! any limit is set.
//!
//! A limit-aware claim reads, inside its transaction, how many rows of
//! each key run (counted from the running rows themselves) and each key's
//! rate state; then each draw finds the due rows it may start
//! (the private `limit_walk` module: group by group, skipping keys that
//! may start nothing more), admits what each key's limit allows
//! ([`Admission`]) and claims those rows by id, so a saturated key holds
//! back neither other keys nor unlimited tasks.
//!
//! Where claimers run at once (Postgres), each key is locked for the rest
//! of the transaction before its tasks are admitted, with a lock that is
//! only tried ([`Executor::lock_limit_keys`]): a key another claimer holds
//! is skipped this round, nobody waits, and what is counted after the lock
//! is exact until the commit. No row is admitted before its key's count is
//! read: where rows are read apart from their claim, the count goes out
//! beside the next fetch of rows (one round trip where the executor
//! pipelines); where one statement reads and claims them
//! ([`RangeReads::Together`](super::flows::RangeReads)), just before it.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;

use cairnq_protocol::Sql;
use serde::Deserialize;
use serde_json::Value;

use super::flows::{Executor, LimitLocks};
use super::query::Query;
use super::schedules::clock;
use cairnq_core::Task;
use cairnq_core::backend::DrawPlan;
use cairnq_core::backend::{Admission, LimitBook};
use cairnq_core::store::{
    ClaimParams, KeyUsage, LimitRow, LimitUsage, LimitUsageParams, LimitWaitParams, LimitsQuery, RemoveLimitParams,
    SetLimitParams,
};
use cairnq_core::{Error, Result};

pub(crate) fn decode<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::corrupt_row(format!("a {what} row: {e}")))
}

/// Limits as asked, by key.
pub async fn limits(exec: &impl Executor, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
    let q = match &query.key {
        Some(key) => Query::new(Sql::SelectLimits).flag("by_key").arg("key", key),
        None => Query::new(Sql::SelectLimits),
    };
    exec.rows(q).await
}

/// Creates or replaces a limit; the row as stored.
pub async fn set_limit(exec: &impl Executor, params: &SetLimitParams) -> Result<LimitRow> {
    let r = &params.row;
    let q = Query::new(Sql::UpsertLimit)
        .arg("key", &r.key)
        .arg("concurrency", r.concurrency)
        .arg("rate_count", r.rate_count)
        .arg("rate_period_ms", r.rate_period_ms)
        .arg("burst", r.burst);
    exec.rows::<LimitRow>(q).await?.pop().ok_or_else(|| Error::corrupt_row("a limit upsert returned no row"))
}

/// Deletes a limit; whether it existed.
pub async fn remove_limit(exec: &impl Executor, params: &RemoveLimitParams) -> Result<bool> {
    Ok(!exec.rows::<String>(Query::new(Sql::DeleteLimit).arg("key", &params.key)).await?.is_empty())
}

/// Whether any limit is set (the query [`flows::claim_with`](super::flows::claim_with)
/// sends with lease recovery).
pub(crate) fn any_limits() -> Query {
    Query::new(Sql::AnyLimits)
}

/// `(key, count)` of the running rows of `keys` (all keys: `None`).
async fn running(exec: &impl Executor, keys: Option<&[String]>) -> Result<Vec<(String, u64)>> {
    let q = match keys {
        Some(keys) => Query::new(Sql::CountRunningOfKeys).arg("keys", keys.to_vec()),
        None => Query::new(Sql::CountRunningByLimitKey),
    };
    counts(exec, q).await
}

/// `(key, count)` rows of a counting statement (a key that is no text
/// limits nothing and is left out).
async fn counts(exec: &impl Executor, q: Query) -> Result<Vec<(String, u64)>> {
    #[derive(Deserialize)]
    struct Count {
        key: Value,
        n: u64,
    }
    let rows = exec.rows::<String>(q).await?;
    rows.iter()
        .map(|t| decode::<Count>("key count", t))
        .filter_map(|r| r.map(|r| text_key(r.key).map(|k| (k, r.n))).transpose())
        .collect()
}

/// Every key with running or queued tasks or rate state, and how many of
/// each (see [`Store::limit_usage`](cairnq_core::Store::limit_usage)).
pub async fn limit_usage(exec: &impl Executor, params: &LimitUsageParams) -> Result<LimitUsage> {
    let _ = params;
    let now_ms = clock(exec).await?;
    let (running, waiting, states) = futures::try_join!(
        running(exec, None),
        counts(exec, Query::new(Sql::CountQueuedByLimitKey)),
        states(exec, None, now_ms),
    )?;
    let mut keys: BTreeMap<String, KeyUsage> = BTreeMap::new();
    fn usage(keys: &mut BTreeMap<String, KeyUsage>, key: String) -> &mut KeyUsage {
        keys.entry(key.clone()).or_insert_with(|| KeyUsage::new(key))
    }
    for (key, n) in running {
        usage(&mut keys, key).running = n;
    }
    for (key, n) in waiting {
        usage(&mut keys, key).waiting = n;
    }
    for (key, tat) in states {
        usage(&mut keys, key).tat_ms = Some(tat);
    }
    Ok(LimitUsage::new(now_ms, keys.into_values().collect()))
}

/// Milliseconds until the soonest key a rate held back at the params'
/// `since` may start again, zero when it may already (see
/// [`Store::limit_wait`](cairnq_core::Store::limit_wait) and
/// [`LimitBook::rate_wait`]); `None` when no rate held a key back.
pub async fn limit_wait(exec: &impl Executor, params: &LimitWaitParams) -> Result<Option<i64>> {
    let now_ms = clock(exec).await?;
    let since_ms = params.since_ms(now_ms);
    let (limits, states) =
        futures::try_join!(exec.rows::<LimitRow>(Query::new(Sql::SelectLimits)), states(exec, None, since_ms))?;
    Ok(LimitBook::new(&limits).rate_wait(&states, since_ms, now_ms))
}

/// `(key, theoretical arrival time)` of the rate states of `keys` that
/// can still hold a start back at `after_ms` (a wait hint asks from its
/// claim's time, before the store's now).
async fn states(exec: &impl Executor, keys: Option<&[String]>, after_ms: i64) -> Result<Vec<(String, i64)>> {
    #[derive(Deserialize)]
    struct State {
        key: String,
        tat_ms: i64,
    }
    let q = with_keys(Query::new(Sql::SelectLimitState).arg("after_ms", after_ms), keys);
    let rows = exec.rows::<String>(q).await?;
    rows.iter().map(|t| decode::<State>("rate state", t).map(|s| (s.key, s.tat_ms))).collect()
}

fn with_keys(q: Query, keys: Option<&[String]>) -> Query {
    match keys {
        Some(keys) => q.flag("keys").arg("keys", keys.to_vec()),
        None => q,
    }
}

/// The limit key a `limit_key` value stands for: a string as it is, a
/// number as its text (as SQL reads `limit_key` as text); any other value
/// limits nothing.
pub(crate) fn text_key(value: Value) -> Option<String> {
    match value {
        Value::String(key) => Some(key),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The limit-aware draws of one claim, after lease recovery: each draw of
/// `params` from `first` on, within `plan`; the rate state of every key
/// that started tasks is written before returning.
pub(crate) async fn claim_limited(
    exec: &impl Executor,
    params: &ClaimParams,
    plan: &mut DrawPlan<'_>,
    first: usize,
) -> Result<Vec<Task>> {
    // The first draw's first groups need no limit to be read: they go out
    // with the limits (one round trip for both).
    let first_groups =
        params.draws.get(first).and_then(|draw| LimitedClaim::first_groups(exec, draw, plan.limit(first)));
    let ((), now_ms, limits, mut first_groups) = futures::try_join!(
        exec.plan_once(),
        clock(exec),
        exec.rows::<LimitRow>(Query::new(Sql::SelectLimits)),
        async {
            match first_groups {
                Some(groups) => groups.await.map(Some),
                None => Ok(None),
            }
        }
    )?;
    let admission = Admission::new(&limits, now_ms);
    let mut claim = LimitedClaim { admission, seen: HashSet::new(), unread: Unread::default(), now_ms };
    let mut claimed = Vec::new();
    for (index, draw) in params.draws.iter().enumerate().skip(first) {
        let (taken, drawn) = claim.draw(exec, params, draw, plan.limit(index), first_groups.take()).await?;
        plan.took(index, drawn);
        claimed.extend(taken);
    }
    let (keys, tats): (Vec<String>, Vec<i64>) = claim.admission.rate_states().into_iter().unzip();
    if !keys.is_empty() {
        exec.rows::<()>(Query::new(Sql::UpsertLimitState).arg("keys", keys).arg("tats", tats)).await?;
    }
    cairnq_core::observe::limits_throttled(claim.admission.throttled().iter().map(String::as_str));
    Ok(claimed)
}

/// The admissions of one claim and the keys it holds (its draws are
/// [`limit_walk`](super::limit_walk)'s).
pub(crate) struct LimitedClaim {
    pub(crate) admission: Admission,
    /// Limited keys met so far: counted (and, where claimers run at once,
    /// locked), or found held by another claimer.
    seen: HashSet<String>,
    /// Met and locked, not read yet: see [`read_unread_beside`](Self::read_unread_beside).
    unread: Unread,
    now_ms: i64,
}

/// Keys a claim locked whose running count and rate state it has not read
/// yet, and the keys met whose pass-over (the throttled count) waits for
/// that read.
#[derive(Default)]
struct Unread {
    locked: Vec<String>,
    met: Vec<String>,
}

impl LimitedClaim {
    /// Locks and reads at once the limited keys among `keys` met for the
    /// first time (see [`lock_keys`](Self::lock_keys)).
    pub(crate) async fn meet_keys<'k>(
        &mut self,
        exec: &impl Executor,
        keys: impl Iterator<Item = &'k str>,
    ) -> Result<()> {
        self.lock_keys(exec, keys).await?;
        self.read_unread_beside(exec, async { Ok(()) }).await
    }

    /// Locks the limited keys among `keys` met for the first time, where
    /// claimers run at once (a count read before the lock could be stale
    /// by the commit); a key another claimer holds is skipped this round.
    /// Their running rows and rate state are read later, by
    /// [`read_unread_beside`](Self::read_unread_beside), before any of
    /// their tasks is admitted; `keys` are passed over (counted as
    /// throttled, when at their limit) then.
    pub(crate) async fn lock_keys<'k>(
        &mut self,
        exec: &impl Executor,
        keys: impl Iterator<Item = &'k str>,
    ) -> Result<()> {
        let book = self.admission.book();
        let mut wanted = Vec::new();
        for key in keys {
            if book.limits(key) && !self.seen.contains(key) {
                wanted.push(key.to_string());
            }
            self.unread.met.push(key.to_string());
        }
        wanted.sort();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(());
        }
        self.seen.extend(wanted.iter().cloned());
        let locked = match exec.lock_limit_keys(&wanted).await? {
            LimitLocks::Exclusive => wanted,
            LimitLocks::Granted(granted) => {
                let granted: HashSet<String> = granted.into_iter().collect();
                let (locked, held): (Vec<String>, Vec<String>) = wanted.into_iter().partition(|k| granted.contains(k));
                held.iter().for_each(|key| self.admission.hold(key));
                locked
            }
        };
        self.unread.locked.extend(locked);
        Ok(())
    }

    /// Runs `beside` (the claim's next fetch of rows) together with the
    /// read of the running count and rate state of the keys locked and not
    /// read yet: one round trip for both where the executor pipelines. A
    /// key not yet read looks unconstrained to a fetch sized before the
    /// read; it is locked by this claim, so rows of it fetched beyond its
    /// budget start nowhere this round. What `beside` returns.
    pub(crate) async fn read_unread_beside<T>(
        &mut self,
        exec: &impl Executor,
        beside: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let Unread { locked, met } = std::mem::take(&mut self.unread);
        let usage = async {
            if locked.is_empty() {
                return Ok((Vec::new(), Vec::new()));
            }
            futures::try_join!(running(exec, Some(&locked)), states(exec, Some(&locked), self.now_ms))
        };
        let (out, (running, states)) = futures::try_join!(beside, usage)?;
        for key in &locked {
            let n = running.iter().find(|(k, _)| k == key).map_or(0, |(_, n)| *n);
            let tat = states.iter().find(|(k, _)| k == key).map(|(_, t)| *t);
            self.admission.observe_running(key, n);
            self.admission.observe_tat(key, tat);
        }
        met.iter().for_each(|key| self.admission.pass_over(key));
        Ok(out)
    }
}
