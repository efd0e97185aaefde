//! How a [`SqliteStore`](crate::SqliteStore) opens and runs its database.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Clock, Install, SystemClock};

/// How hard SQLite works to make a commit survive a power loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `synchronous = FULL` (the default): a commit is on disk before any
    /// caller hears it succeeded, even across a power loss.
    #[default]
    Full,
    /// `synchronous = NORMAL`: faster commits in WAL mode. A crash of the
    /// process loses nothing, but a power loss or OS crash may roll back the
    /// last commits that callers already heard succeed. An explicit
    /// trade-off: pick it only when losing recent submits is acceptable.
    Normal,
}

impl Synchronous {
    pub(crate) fn pragma_value(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Options of [`SqliteStore::open_with`](crate::SqliteStore::open_with).
/// `Default`: the system clock, a 5 s busy timeout, 2 reader threads,
/// `synchronous = FULL`, group commits of at most 256 writes, other
/// connections' commits watched every 1 ms while someone waits, the file
/// created and migrated when needed ([`Install::Migrate`]).
///
/// They are the options of the database's threads, so the first store of
/// this process to open a database sets them for every store that shares
/// it; a later open of the same database does not use its own (see the
/// [crate docs](crate#one-writer-per-database-in-a-process)). A database in
/// memory has no reader threads and no watcher: `readers` and
/// `watch_interval` do not apply to it.
///
/// ```
/// use std::time::Duration;
/// use cairnq_sqlite::{SqliteOptions, Synchronous};
/// let options = SqliteOptions::new().busy_timeout(Duration::from_secs(10)).readers(4);
/// assert_eq!(options.synchronous, Synchronous::Full);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Where "now" comes from (SQLite statements take it from the SDK).
    pub clock: Arc<dyn Clock>,
    /// How long a write waits for another process's write lock before it
    /// fails with a transient storage error. Waited out on the writer
    /// thread, trying again every 1-2 ms; reads and the async runtime carry
    /// on meanwhile.
    pub busy_timeout: Duration,
    /// Reader threads, each with its own connection (at least 1). None
    /// in memory: the writer reads there.
    pub readers: usize,
    /// The durability level, see [`Synchronous`].
    pub synchronous: Synchronous,
    /// The most writes one group commit takes (at least 1).
    pub max_batch: usize,
    /// How often a watcher thread checks for commits of other connections
    /// (other processes) while someone sleeps in
    /// [`Notifications::watch`](cairnq_core::Notifications::watch);
    /// `None` turns cross-process wakeups off (those commits are then seen
    /// at the caller's next poll). With nobody sleeping it does not poll.
    pub watch_interval: Option<Duration>,
    /// Whether opening may create the file and apply migrations
    /// ([`Install::Migrate`], the default) or only uses an existing
    /// installation as it is ([`Install::Existing`]: a missing file, or one
    /// without the cairnq tables, is refused with
    /// [`Error::Unusable`](cairnq_core::Error::Unusable) and left as it was).
    pub install: Install,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            busy_timeout: Duration::from_secs(5),
            readers: 2,
            synchronous: Synchronous::Full,
            max_batch: 256,
            watch_interval: Some(Duration::from_millis(1)),
            install: Install::Migrate,
        }
    }
}

impl fmt::Debug for SqliteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteOptions")
            .field("busy_timeout", &self.busy_timeout)
            .field("readers", &self.readers)
            .field("synchronous", &self.synchronous)
            .field("max_batch", &self.max_batch)
            .field("watch_interval", &self.watch_interval)
            .field("install", &self.install)
            .finish_non_exhaustive()
    }
}

impl SqliteOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With another clock (tests pin time with one).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// With another busy timeout.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// With this many reader threads (at least 1).
    pub fn readers(mut self, readers: usize) -> Self {
        self.readers = readers.max(1);
        self
    }

    /// With another durability level.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// With another watch interval for cross-process wakeups, or `None`
    /// for none (see [`watch_interval`](Self::watch_interval)).
    pub fn watch_interval(mut self, interval: Option<Duration>) -> Self {
        self.watch_interval = interval;
        self
    }

    /// With another installation policy (see [`install`](Self::install)).
    ///
    /// ```
    /// use cairnq_core::Install;
    /// use cairnq_sqlite::SqliteOptions;
    /// let look_only = SqliteOptions::new().install(Install::Existing);
    /// assert_eq!(look_only.install, Install::Existing);
    /// ```
    pub fn install(mut self, install: Install) -> Self {
        self.install = install;
        self
    }

    /// With another group-commit cap (at least 1).
    pub fn max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.max(1);
        self
    }
}
