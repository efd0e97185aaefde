//! Limits through the client: set, read and remove the flow-control
//! limits every worker process on the database enforces in its claims
//! (see [`Limit`] for the semantics). Each limit is validated here, before
//! anything is written.

use super::CairnQ;
use crate::error::Result;
use crate::limit::{KeyUse, Limit, LimitInfo, validate_key};
use crate::store::{LimitsQuery, RemoveLimitParams, SetLimitParams};

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
