//! What a process says while its database cannot be reached: one line when
//! the outage starts, a reminder now and then while it lasts, and one line
//! when it ends, however many parts of the process (a worker's claim loop,
//! heartbeat, settles, schedules and repair; a second worker; the queue
//! gauges) fail meanwhile.
//!
//! Every part that calls the store could report each failure itself, and
//! during an outage that is a line a second per part for as long as it
//! lasts, with nothing saying when it ended. So the outage is one shared
//! state per store in a process ([`Outage::of`], keyed by the store's
//! `Arc` as the queue gauges are): the part whose call first fails
//! unreachable gets to say so, then the one that fails after a
//! [`OUTAGE_REMINDER`] has passed, then the one whose call first succeeds
//! says how long it lasted. Each part says it through its own channel (a
//! worker's `on_error` hook or `tracing`), so the lines land where that
//! part's reports always do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::Error;
use crate::store::Store;

/// How often an outage that goes on is mentioned again.
pub const OUTAGE_REMINDER: Duration = Duration::from_secs(60);

/// Every store's outage state in this process. The `Weak` keeps the
/// store's allocation, so no other store can take its address while the
/// entry lives; an entry whose store is gone is dropped.
static OUTAGES: Mutex<Vec<StoreOutage>> = Mutex::new(Vec::new());

/// A store (by its allocation) and its outage state.
type StoreOutage = (Weak<dyn Store>, Arc<Outage>);

/// What a caller should say about the database being reachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutageNews {
    /// The database just became unreachable.
    Began,
    /// It has been unreachable this long, and still is.
    Continues {
        /// Since the first failed call.
        down_for: Duration,
    },
    /// It answers again, after being unreachable this long.
    Ended {
        /// From the first failed call to the first answered one.
        after: Duration,
    },
}

/// One store's outage state in this process (see the module docs).
///
/// ```
/// # use std::sync::Arc;
/// # use cairnq_core::Error;
/// use cairnq_core::observe::{Outage, OutageNews};
/// let outage = Outage::new(Some("db.example:5432".into()));
/// let refused = Error::Unreachable { message: "connect: refused".into(), source: None };
/// assert_eq!(outage.failed(&refused), Some(OutageNews::Began));
/// assert_eq!(outage.failed(&refused), None, "said already");
/// assert!(matches!(outage.reached(), Some(OutageNews::Ended { .. })));
/// assert_eq!(outage.reached(), None, "nothing to say while it answers");
/// ```
#[derive(Debug)]
pub struct Outage {
    endpoint: Option<String>,
    /// Whether an outage is on: read by every successful call, so it is
    /// an atomic and the lock is taken only around a change.
    down: AtomicBool,
    state: Mutex<Option<Down>>,
    /// Woken when an outage ends, for loops backing off meanwhile.
    ended: tokio::sync::Notify,
}

#[derive(Debug, Clone, Copy)]
struct Down {
    since: Instant,
    last_said: Instant,
}

impl Outage {
    /// The state of `store` shared by every part of this process.
    pub fn of(store: &Arc<dyn Store>) -> Arc<Outage> {
        let key = Arc::downgrade(store);
        let mut outages = OUTAGES.lock();
        outages.retain(|(store, _)| store.strong_count() > 0);
        if let Some((_, outage)) = outages.iter().find(|(known, _)| known.ptr_eq(&key)) {
            return Arc::clone(outage);
        }
        let outage = Arc::new(Outage::new(store.endpoint()));
        outages.push((key, Arc::clone(&outage)));
        outage
    }

    /// A state of its own, for a store at `endpoint` (see
    /// [`Store::endpoint`]); [`of`](Self::of) shares one per store.
    pub fn new(endpoint: Option<String>) -> Self {
        Self { endpoint, down: AtomicBool::new(false), state: Mutex::new(None), ended: tokio::sync::Notify::new() }
    }

    /// Where the database is, when its store says (`host:port`, a path).
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// A call failed with `error`. For an unreachable database
    /// ([`Error::is_unreachable`]), the news to report, when it is the
    /// caller's to tell: the outage began, or goes on and was last
    /// mentioned [`OUTAGE_REMINDER`] ago. `None` when there is nothing to
    /// say: another part said it already, or `error` is about the call
    /// rather than an outage (report that as usual).
    pub fn failed(&self, error: &Error) -> Option<OutageNews> {
        if !error.is_unreachable() {
            return None;
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        match &mut *state {
            None => {
                *state = Some(Down { since: now, last_said: now });
                self.down.store(true, Ordering::Release);
                Some(OutageNews::Began)
            }
            Some(down) if now.duration_since(down.last_said) >= OUTAGE_REMINDER => {
                down.last_said = now;
                Some(OutageNews::Continues { down_for: now.duration_since(down.since) })
            }
            Some(_) => None,
        }
    }

    /// A call was answered: [`OutageNews::Ended`] for the first one after
    /// an outage, else `None`.
    pub fn reached(&self) -> Option<OutageNews> {
        if !self.down.load(Ordering::Acquire) {
            return None;
        }
        let ended = self.state.lock().take()?;
        self.down.store(false, Ordering::Release);
        self.ended.notify_waiters();
        Some(OutageNews::Ended { after: ended.since.elapsed() })
    }

    /// Resolves once the database is known to answer: at once when no
    /// outage is on, else when some call of the process is answered. A
    /// loop backing off through an outage waits on it too, so it resumes
    /// as soon as anything reached the database, not at the end of a long
    /// pause.
    pub async fn reachable(&self) {
        let ended = self.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if self.is_down() {
            ended.await;
        }
    }

    /// Whether the database is unreachable as far as this process knows.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// The news as one line: `the database at HOST:PORT is unreachable:
    /// CAUSE`, `... still unreachable after 1m 0s: CAUSE`, `... reconnected
    /// after 8.2 s`.
    pub fn describe(&self, news: OutageNews, cause: Option<&Error>) -> String {
        let database = match &self.endpoint {
            Some(endpoint) => format!("the database at {endpoint}"),
            None => "the database".to_string(),
        };
        let cause = cause.map(|e| format!(": {e}")).unwrap_or_default();
        match news {
            OutageNews::Began => format!(
                "{database} is unreachable (retrying; said again every {} s while it lasts){cause}",
                OUTAGE_REMINDER.as_secs()
            ),
            OutageNews::Continues { down_for } => {
                format!("{database} is still unreachable after {}{cause}", crate::human_duration(down_for))
            }
            OutageNews::Ended { after } => {
                format!("{database} answers again: reconnected after {:.1} s", after.as_secs_f64())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreachable_errors_start_an_outage() {
        let outage = Outage::new(None);
        assert_eq!(outage.failed(&Error::storage("deadlock", std::io::Error::other("40P01"))), None);
        assert!(!outage.is_down());
        assert_eq!(outage.reached(), None);
    }

    #[test]
    fn lines_name_the_endpoint_and_the_length() {
        let outage = Outage::new(Some("127.0.0.1:5432".into()));
        let ended = outage.describe(OutageNews::Ended { after: Duration::from_millis(8_240) }, None);
        assert_eq!(ended, "the database at 127.0.0.1:5432 answers again: reconnected after 8.2 s");
        let refused = Error::Unreachable { message: "refused".into(), source: None };
        let began = outage.describe(OutageNews::Began, Some(&refused));
        assert!(
            began.starts_with("the database at 127.0.0.1:5432 is unreachable")
                && began.ends_with(": database unreachable: refused"),
            "{began}"
        );
    }
}
