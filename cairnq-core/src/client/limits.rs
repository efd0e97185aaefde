//! Limits through the client: set, read and remove the flow-control
//! limits every worker process on the database enforces in its claims
//! (see [`Limit`] for the semantics). Each limit is validated here, before
//! anything is written.

use std::collections::BTreeMap;

use super::CairnQ;
use crate::backend::LimitBook;
use crate::error::Result;
use crate::limit::{KeyUse, Limit, LimitInfo, LimitStatus, validate_key};
use crate::store::{LimitUsageParams, LimitsQuery, RemoveLimitParams, SetLimitParams};

impl CairnQ {
    /// Creates or replaces the limit on `limit.key`; the limit as stored.
    /// The next claim of any worker enforces it; running tasks are never
    /// interrupted.
    ///
    /// ```
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use std::time::Duration;
    /// use cairnq_core::Limit;
    /// client.set_limit(&Limit::new("tenant:*").concurrency(2)).await?;
    /// client.set_limit(&Limit::new("api:maps").rate(100, Duration::from_secs(60)).burst(10)).await?;
    /// let task = client.submit("geocode", &serde_json::json!({})).limit_key("api:maps").await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_limit(&self, limit: &Limit) -> Result<LimitInfo> {
        let row = limit.to_row()?;
        Limit::from_row(&self.store.set_limit(&SetLimitParams::new(row)).await?)
    }

    /// Every limit, by key.
    pub async fn limits(&self) -> Result<Vec<LimitInfo>> {
        self.store.limits(&LimitsQuery::all()).await?.iter().map(Limit::from_row).collect()
    }

    /// Every limit, by key, with what it governs now: the tasks running and
    /// waiting under it and when its rate next admits a start. Reads the
    /// limits and counts the running and queued tasks that carry a key.
    pub async fn limit_statuses(&self) -> Result<Vec<LimitStatus>> {
        let rows = self.store.limits(&LimitsQuery::all()).await?;
        if rows.is_empty() {
            // Nothing to count for (the queue gauges ask every interval).
            return Ok(Vec::new());
        }
        let usage = self.store.limit_usage(&LimitUsageParams::new()).await?;
        let book = LimitBook::new(&rows);
        let mut statuses: BTreeMap<String, LimitStatus> = BTreeMap::new();
        for row in &rows {
            let info = Limit::from_row(row)?;
            let next_admit_ms =
                book.rate(&row.key).filter(|_| !info.limit.is_prefix()).map(|g| g.next_admit(None, usage.now_ms));
            statuses.insert(row.key.clone(), LimitStatus { info, running: 0, waiting: 0, keys: 0, next_admit_ms });
        }
        for key in &usage.keys {
            let Some(status) = book.governing(&key.key).and_then(|k| statuses.get_mut(&k)) else { continue };
            status.running += key.running;
            status.waiting += key.waiting;
            status.keys += u64::from(key.running + key.waiting > 0);
            let Some(rate) = book.rate(&key.key) else { continue };
            let at = rate.next_admit(key.tat_ms, usage.now_ms);
            status.next_admit_ms = if status.info.limit.is_prefix() {
                (key.waiting > 0).then_some(at).into_iter().chain(status.next_admit_ms).min()
            } else {
                Some(at)
            };
        }
        Ok(statuses.into_values().collect())
    }

    /// The limit stored under exactly `key` (a prefix default is read by
    /// its own key, `tenant:*`), if any.
    pub async fn limit(&self, key: &str) -> Result<Option<LimitInfo>> {
        validate_key("key", key, KeyUse::Limit)?;
        self.store.limits(&LimitsQuery::key(key)).await?.first().map(Limit::from_row).transpose()
    }

    /// Removes the limit stored under exactly `key`; whether there was one.
    /// Its tasks start unlimited from the next claim (unless a prefix
    /// default matches them).
    pub async fn remove_limit(&self, key: &str) -> Result<bool> {
        validate_key("key", key, KeyUse::Limit)?;
        self.store.remove_limit(&RemoveLimitParams::new(key)).await
    }
}
