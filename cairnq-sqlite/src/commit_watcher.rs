//! Cross-process push wakeups: one watcher thread per open database file
//! notices commits made through any other connection to the file (another
//! process, another SDK, a store this process opened through a hard link)
//! and wakes every sleeper of
//! [`Notifications::watch`](cairnq_core::Notifications::watch).
//! Stores of this process on the same file share one writer, whose
//! commits wake their sleepers directly (`cairnq_core::backend::WakeBoard`).
//!
//! The watcher reads the wal-index header from the `-shm` file, which
//! SQLite rewrites on every commit, and confirms with `PRAGMA
//! data_version` on its own connection (which SQLite changes exactly when
//! another connection committed) when the header moved or a second has
//! passed. It polls every
//! [`SqliteOptions::watch_interval`](crate::SqliteOptions::watch_interval)
//! (slower, up to 16x, while the file stays quiet) ONLY while someone
//! sleeps; with no sleeper it parks on a condvar and costs nothing. A foreign commit says nothing about which tasks changed,
//! so it wakes every sleeper; each re-polls (one cheap read) and sleeps
//! again. Commits of this store's own writer change `data_version` too and
//! wake sleepers spuriously; harmless, since polling stays the source of
//! truth and a wakeup never decides anything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use cairnq_core::backend::WakeSource;
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

/// Every sleeper of the database's wake board also waits for the next
/// foreign commit.
impl WakeSource for CommitWatch {
    fn subscribe(&self, notify: &Arc<Notify>) {
        CommitWatch::subscribe(self, notify);
    }

    fn prune(&self) {
        CommitWatch::prune(self);
    }
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
const QUIET_POLLS_PER_STEP: u32 = 25;
/// The longest pause, as a multiple of the watch interval.
const MAX_SLOWDOWN: u32 = 16;

/// How often the watcher also reads `data_version` while the wal-index
/// header is readable: the header is read without SQLite's locks, and this
/// keeps a wakeup from ever hanging on that read alone.
const CONFIRM_EVERY: Duration = Duration::from_secs(1);

/// The watcher thread's loop: parked while nobody sleeps, polling while
/// someone does. A poll reads the wal-index header (see [`ShmHeader`]); a
/// change, an unreadable header, or [`CONFIRM_EVERY`] passing brings a
/// `data_version` read too. It polls every `interval` while the file is
/// busy and backs off step by step (up to 16x) while it stays quiet, so a
/// long-idle worker costs little and the first commit after a lull is
/// still seen within a few milliseconds. Nothing is re-read after a park,
/// so a commit that landed while parked (just before a sleeper subscribed)
/// still wakes it: at worst one spurious wakeup, never a missed one.
pub(crate) fn run_watcher(conn: Connection, mut shm: ShmHeader, watch: Arc<CommitWatch>, interval: Duration) {
    let (mut header, mut version) = (shm.read(), data_version(&conn));
    let mut confirmed = Instant::now();
    let mut quiet: u32 = 0;
    while watch.await_sleeper() {
        std::thread::sleep(pause(interval, quiet));
        let now_header = shm.read();
        let mut changed = now_header.is_some() && now_header != header;
        if now_header.is_none() || changed || confirmed.elapsed() >= CONFIRM_EVERY {
            confirmed = Instant::now();
            let now_version = data_version(&conn);
            changed |= now_version != version;
            version = now_version;
        }
        header = now_header;
        if changed {
            quiet = 0;
            watch.wake_all();
        } else {
            quiet = quiet.saturating_add(1);
        }
    }
}

/// The wal-index header at the start of the database's `-shm` file. SQLite
/// rewrites it on every commit (its change counter and last valid frame
/// move), so reading it tells a commit from none for the price of one
/// `pread`; `data_version` asks the same through a read transaction, about
/// a hundred times the work. A torn read (no lock is taken) only looks like
/// a change: one spurious wakeup. `None` where it cannot be read (no such
/// file, or not a Unix system).
pub(crate) struct ShmHeader {
    path: PathBuf,
    file: Option<std::fs::File>,
}

/// The two copies of the wal-index header plus the checkpoint info.
const SHM_HEADER_BYTES: usize = 136;

impl ShmHeader {
    /// The header of the database at `path` (SQLite names the file `<path>-shm`).
    pub(crate) fn of(path: &Path) -> Self {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        Self { path: PathBuf::from(shm), file: None }
    }

    #[cfg(unix)]
    fn read(&mut self) -> Option<[u8; SHM_HEADER_BYTES]> {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        let mut header = [0u8; SHM_HEADER_BYTES];
        match self.file.as_ref()?.read_exact_at(&mut header, 0) {
            Ok(()) => Some(header),
            Err(_) => {
                // Opened again next time: the file may have been recreated.
                self.file = None;
                None
            }
        }
    }

    #[cfg(not(unix))]
    fn read(&mut self) -> Option<[u8; SHM_HEADER_BYTES]> {
        let _ = (&self.path, &self.file);
        None
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

    /// The header read is what a poll relies on: it must move with every
    /// commit (even one that leaves the WAL's length alone) and only then.
    #[cfg(unix)]
    #[test]
    fn the_wal_index_header_moves_with_each_commit_and_only_then() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("watched.db");
        let writer = Connection::open(&path).expect("open");
        writer.pragma_update(None, "journal_mode", "wal").expect("wal");
        writer.execute_batch("create table t (x); insert into t values (0);").expect("seed");
        let mut shm = ShmHeader::of(&path);
        let mut seen = shm.read().expect("the -shm file is readable");
        for i in 1..=20 {
            assert_eq!(shm.read(), Some(seen), "no commit, no change");
            writer.execute("update t set x = ?1", [i]).expect("commit");
            let now = shm.read().expect("readable");
            assert_ne!(now, seen, "commit {i} left the header as it was");
            seen = now;
            if i == 10 {
                // The next commit rewrites the WAL from its start.
                writer.execute_batch("pragma wal_checkpoint(restart)").expect("checkpoint");
                seen = shm.read().expect("readable");
            }
        }
    }
}
