//! Cross-process push wakeups: one watcher thread per store notices
//! commits made through any other connection to the file (another process,
//! another SDK, another store in this process) and wakes every sleeper of
//! [`Store::wait_for_change`](cairnq_core::Store::wait_for_change).
//!
//! The watcher asks its own connection for `PRAGMA data_version`, which
//! SQLite changes exactly when another connection committed (reading it
//! takes only the WAL-index header from shared memory). It polls every
//! [`SqliteOptions::watch_interval`](crate::SqliteOptions::watch_interval)
//! (slower, up to 16x, while the file stays quiet) ONLY while someone
//! sleeps; with no sleeper it parks on a condvar and costs nothing. A foreign commit says nothing about which tasks changed,
//! so it wakes every sleeper; each re-polls (one cheap read) and sleeps
//! again. Commits of this store's own writer change `data_version` too and
//! wake sleepers spuriously; harmless, since polling stays the source of
//! truth and a wakeup never decides anything.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;
use tokio::sync::Notify;

/// Changes exactly when another connection committed to the file.
const DATA_VERSION: &str = "pragma data_version";

#[derive(Debug, Default)]
struct Sleepers {
    waiting: Vec<Weak<Notify>>,
    closed: bool,
}

/// The sleepers the watcher thread wakes on a foreign commit.
#[derive(Debug, Default)]
pub(crate) struct CommitWatch {
    sleepers: Mutex<Sleepers>,
    someone_waits: Condvar,
}

impl CommitWatch {
    /// Registers a sleeper and starts the watcher polling if it was parked.
    pub(crate) fn subscribe(&self, notify: &Arc<Notify>) {
        let mut sleepers = self.sleepers.lock();
        sleepers.waiting.retain(|w| w.strong_count() > 0);
        sleepers.waiting.push(Arc::downgrade(notify));
        self.someone_waits.notify_one();
    }

    /// Forgets sleepers that stopped waiting (their `Notify` was dropped).
    pub(crate) fn prune(&self) {
        self.sleepers.lock().waiting.retain(|w| w.strong_count() > 0);
    }

    /// Ends the watcher thread (the store is closing or dropped).
    pub(crate) fn close(&self) {
        self.sleepers.lock().closed = true;
        self.someone_waits.notify_all();
    }

    /// Blocks while nobody sleeps; `false` once closed.
    fn await_sleeper(&self) -> bool {
        let mut sleepers = self.sleepers.lock();
        while sleepers.waiting.is_empty() && !sleepers.closed {
            self.someone_waits.wait(&mut sleepers);
        }
        !sleepers.closed
    }

    fn wake_all(&self) {
        let woken = std::mem::take(&mut self.sleepers.lock().waiting);
        // notify_one stores a permit: a sleeper not yet awaiting still wakes.
        woken.iter().filter_map(Weak::upgrade).for_each(|n| n.notify_one());
    }
}

/// Quiet polls (no change seen) before the pause doubles.
const QUIET_POLLS_PER_STEP: u32 = 100;
/// The longest pause, as a multiple of the watch interval.
const MAX_SLOWDOWN: u32 = 16;

/// The watcher thread's loop: parked while nobody sleeps, polling
/// `data_version` while someone does. It polls every `interval` while the
/// file is busy and backs off step by step (up to 16x) while it stays
/// quiet, so a long-idle worker costs little and the first commit after a
/// lull is still seen within a few milliseconds. The version is not re-read
/// after a park, so a commit that landed while parked (just before a
/// sleeper subscribed) still wakes it: at worst one spurious wakeup, never
/// a missed one.
pub(crate) fn run_watcher(conn: Connection, watch: Arc<CommitWatch>, interval: Duration) {
    let mut seen = data_version(&conn);
    let mut quiet: u32 = 0;
    while watch.await_sleeper() {
        std::thread::sleep(pause(interval, quiet));
        let now = data_version(&conn);
        if now == seen {
            quiet = quiet.saturating_add(1);
        } else {
            seen = now;
            quiet = 0;
            watch.wake_all();
        }
    }
}

/// The pause after `quiet` polls that saw no change.
fn pause(interval: Duration, quiet: u32) -> Duration {
    let steps = quiet / QUIET_POLLS_PER_STEP;
    interval * (1u32 << steps.min(MAX_SLOWDOWN.trailing_zeros()))
}

/// `None` when the read failed (e.g. a busy or vanished file): treated as
/// a change, which only wakes sleepers early.
fn data_version(conn: &Connection) -> Option<i64> {
    let mut stmt = conn.prepare_cached(DATA_VERSION).ok()?;
    stmt.query_row([], |row| row.get(0)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_backs_off_only_while_quiet_and_stays_bounded() {
        let base = Duration::from_millis(1);
        assert_eq!(pause(base, 0), base);
        assert_eq!(pause(base, QUIET_POLLS_PER_STEP - 1), base);
        assert_eq!(pause(base, QUIET_POLLS_PER_STEP), base * 2);
        assert_eq!(pause(base, u32::MAX), base * MAX_SLOWDOWN);
    }
}
