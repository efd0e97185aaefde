//! Where "now" comes from for backends that supply it themselves, and how
//! far past now a task's times may reach.
//!
//! SQLite statements take `now_ms` from a [`Clock`] (one host, one clock);
//! Postgres statements read the database clock instead, because hosts do
//! not share one.
//!
//! Both backends store a time as signed 64-bit epoch milliseconds and
//! compute it in the statement as now plus a span the caller passes
//! (`run_at_ms = now + delay_ms`, `lease_until_ms = now + lease_ms`). A sum
//! past `i64::MAX` is refused by Postgres with driver text, and stored by
//! SQLite as a REAL that no reader of the row can decode, so the client
//! refuses such a span before anything is written, with one
//! `ValidationError` on every backend. The bound needs no clock (the
//! database's is not known above the seam): every span up to
//! [`MAX_DELAY`] fits on top of any clock reading before the year 10000.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::human::human_duration_coarse;

/// 10000-01-01T00:00:00Z in epoch milliseconds: later than any clock a
/// store reads.
const YEAR_10000_MS: i64 = 253_402_300_800_000;

/// [`MAX_DELAY`] in whole milliseconds.
pub(crate) const MAX_DELAY_MS: i64 = i64::MAX - YEAR_10000_MS;

/// The longest delay (and lease) a task can be given: now plus this fits
/// in the signed 64-bit epoch milliseconds the protocol stores times in,
/// for any clock reading before the year 10000 (about 292 million years).
/// Longer ones are refused with `ValidationError` before any write.
///
/// ```
/// # use std::time::Duration;
/// # use cairnq_core::{MAX_DELAY, SubmitOptions, Json};
/// let too_long = SubmitOptions::new().delay(MAX_DELAY + Duration::from_millis(1));
/// let refused = too_long.to_new_task("later", Json::empty_object()).unwrap_err();
/// assert_eq!(refused.kind(), cairnq_core::ErrorKind::ValidationError);
/// assert!(SubmitOptions::new().delay(MAX_DELAY).to_new_task("later", Json::empty_object()).is_ok());
/// ```
// MAX_DELAY_MS is positive, so the cast keeps its value.
pub const MAX_DELAY: Duration = Duration::from_millis(MAX_DELAY_MS as u64);

/// `span` in whole milliseconds, refused as `field` when now plus it could
/// not be stored (see [`MAX_DELAY`]).
pub(crate) fn span_ms(field: &'static str, span: Duration) -> Result<i64> {
    match i64::try_from(span.as_millis()) {
        Ok(ms) if ms <= MAX_DELAY_MS => Ok(ms),
        _ => Err(beyond_max(field, span)),
    }
}

/// Refuses a span in milliseconds that is negative, or that now plus it
/// could not be stored (see [`MAX_DELAY`]).
pub(crate) fn require_span_ms(field: &'static str, ms: i64) -> Result<()> {
    if ms < 0 {
        return Err(Error::validation(field, format!("{ms} is negative")));
    }
    if ms > MAX_DELAY_MS {
        return Err(beyond_max(field, Duration::from_millis(ms.unsigned_abs())));
    }
    Ok(())
}

fn beyond_max(field: &'static str, span: Duration) -> Error {
    Error::validation(
        field,
        format!(
            "{} is too long: now plus it would pass the latest time the protocol stores in 64-bit epoch \
             milliseconds; the longest is about 292 million years",
            human_duration_coarse(span)
        ),
    )
}

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
        now_ms()
    }
}

/// The system wall clock in epoch milliseconds (the protocol's time): what
/// [`SystemClock`] reads, for code that shows or compares times on this
/// host (ages, "3m ago") rather than writing them through a store. A clock
/// set before 1970 reads 0.
///
/// ```
/// assert!(cairnq_core::now_ms() > 1_700_000_000_000);
/// ```
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
