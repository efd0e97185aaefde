//! Settle writes, retried briefly while the store reports a transient
//! error: a write lost to one hiccup would otherwise cost the attempt (its
//! lease runs out and the task runs again).

use std::time::Duration;

use cairnq_core::{Backoff, Result};

/// Attempts of one settle write when the store reports a transient error,
/// and their pauses: equal jitter, doubling from 100 ms (50-100 ms, then
/// 100-200 ms), so writers that all hit one hiccup do not retry in step.
const SETTLE_TRIES: u32 = 3;

fn settle_retry_pause(tries: u32) -> Duration {
    Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).delay(tries)
}

/// Runs a settle write, again (up to [`SETTLE_TRIES`] in all) while the
/// store reports a transient error.
pub(crate) async fn with_transient_retries<T, F, Fut>(mut write: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut tries = 1;
    loop {
        match write().await {
            Err(e) if e.is_transient() && tries < SETTLE_TRIES => {
                tokio::time::sleep(settle_retry_pause(tries)).await;
                tries += 1;
            }
            other => return other,
        }
    }
}
