//! Where "now" comes from for backends that supply it themselves.
//!
//! SQLite statements take `now_ms` from a [`Clock`] (one host, one clock);
//! Postgres statements read the database clock instead, because hosts do
//! not share one.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of epoch milliseconds.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}
