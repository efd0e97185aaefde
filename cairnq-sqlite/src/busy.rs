//! Waiting for another process's write lock: the writer connection's busy
//! handler, and what it counts.
//!
//! SQLite's write lock is not a queue: whoever tries at the moment it is
//! free gets it. SQLite's own busy timeout sleeps 1, 2, 5, 10, 15, 20, 25,
//! 25, 25, 50, 50 ms and then 100 ms between tries, while a process that
//! holds the lock commits and begins its next transaction within
//! microseconds. So a writer that lost a few races sleeps 100 ms at a time
//! and rarely finds the lock free: measured with four worker processes
//! draining 20,000 tasks from one file, one process waited 1.2 s in one
//! wait of 21 tries and ran no task at all, and in a mixed run one worker
//! ran none in 6 s (BENCHMARKS.md, issue 17).
//!
//! This handler tries again after 0.5-1 ms, then every 1-2 ms (equal
//! jitter, so waiters do not try in step), for the whole busy timeout.
//! Shorter pauses were measured too: they share the lock as fairly but
//! hand it over so often that the aggregate throughput of eight processes
//! fell by half (each handover costs the new holder its page cache).
//!
//! Every wait is counted ([`LockWaits`]): how often the writer's
//! `BEGIN IMMEDIATE` found the lock held and how long it waited in all
//! ([`WriteStats`](crate::WriteStats)), the busy wait of processes sharing
//! one file.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// The pause window of the first try, doubled per try up to
/// [`PAUSE_CAP`]; a pause is drawn from the upper half of its window.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const PAUSE_CAP: Duration = Duration::from_millis(2);

/// Counts of the writer's waits for the write lock.
#[derive(Debug, Default)]
pub(crate) struct LockWaits {
    /// Tries that found the lock held (busy handler calls).
    tries: AtomicU64,
    /// Transactions whose `BEGIN` had to wait.
    waits: AtomicU64,
    /// Nanoseconds those `BEGIN`s took in all.
    waited_ns: AtomicU64,
}

impl LockWaits {
    /// Runs `begin` (the `BEGIN IMMEDIATE`), counting its time as a wait
    /// when the busy handler ran meanwhile.
    pub(crate) fn timed<T>(&self, begin: impl FnOnce() -> T) -> T {
        let (tries, started) = (self.tries.load(Ordering::Relaxed), Instant::now());
        let out = begin();
        if self.tries.load(Ordering::Relaxed) != tries {
            let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.waited_ns.fetch_add(ns, Ordering::Relaxed);
        }
        out
    }

    /// (transactions that waited, time waited in all, tries that found the
    /// lock held).
    pub(crate) fn snapshot(&self) -> (u64, Duration, u64) {
        (
            self.waits.load(Ordering::Relaxed),
            Duration::from_nanos(self.waited_ns.load(Ordering::Relaxed)),
            self.tries.load(Ordering::Relaxed),
        )
    }
}

/// Installs the handler on `conn`: short pauses until `timeout` has passed
/// since the lock was first found held, each try counted in `waits`.
pub(crate) fn install(conn: &mut Connection, timeout: Duration, waits: Arc<LockWaits>) -> rusqlite::Result<()> {
    let mut since = Instant::now();
    conn.busy_handler(Some(move |tries_before: i32| {
        if tries_before == 0 {
            since = Instant::now();
        }
        waits.tries.fetch_add(1, Ordering::Relaxed);
        let left = timeout.saturating_sub(since.elapsed());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(pause(tries_before).min(left));
        true
    }))
}

/// The pause after `tries_before` earlier tries of one wait.
fn pause(tries_before: i32) -> Duration {
    let doublings = u32::try_from(tries_before).unwrap_or(0).min(8);
    let window = FIRST_PAUSE.saturating_mul(1 << doublings).min(PAUSE_CAP);
    let half = u64::try_from(window.as_micros() / 2).unwrap_or(0);
    Duration::from_micros(half + fastrand::u64(0..=half))
}

#[cfg(test)]
mod tests {
    //! The pause schedule (the handler itself is exercised by the
    //! contention tests, with another connection holding the lock).

    use super::*;

    #[test]
    fn pauses_stay_short_however_long_the_wait() {
        for _ in 0..200 {
            let first = pause(0);
            assert!(first >= Duration::from_micros(500) && first <= FIRST_PAUSE, "{first:?}");
            for tries in [1, 2, 50, i32::MAX] {
                let later = pause(tries);
                assert!(later >= PAUSE_CAP / 2 && later <= PAUSE_CAP, "{tries}: {later:?}");
            }
        }
    }
}
