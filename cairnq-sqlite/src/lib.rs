//! The SQLite backend of cairnq: one database file, no server, shared with
//! every other cairnq SDK (Python, TypeScript) that opens the same file.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> cairnq_core::Result<()> {
//! let dir = tempfile::tempdir().expect("temp dir");
//! let client = cairnq_core::CairnQ::new(cairnq_sqlite::SqliteStore::open(dir.path().join("q.db")).await?);
//! let task = client.submit("resize", &serde_json::json!({"w": 640})).await?;
//! assert!(client.get(&task.id).await?.is_some());
//! # Ok(()) }
//! ```
//!
//! # Threads, never the async runtime
//!
//! SQLite calls block, so none runs on the async runtime. A database opened
//! by a [`SqliteStore`] gets one **writer thread** with the only connection
//! that writes (claims are writes too) and a few **reader threads** (2 by
//! default) with their own connections for get, list, stats, counts and the
//! claim probe. In WAL mode readers see the last commit while the writer
//! works, so reads never queue behind writes. Callers hand work to a thread
//! over a channel and await a oneshot reply.
//!
//! # One writer per database in a process
//!
//! A second [`SqliteStore::open`] of a database this process already has
//! open (the same file, known by its canonical path, or the same
//! shared-cache name) does not start threads of its own: it gets a store
//! on the first one's writer, readers and watcher. Two writers in one
//! process would only contend for SQLite's single write lock (busy waits,
//! transient `SQLITE_BUSY` failures past the busy timeout); one writer
//! group-commits the writes of both, and its commits wake the sleepers of
//! both at once, with no watcher involved. [`SqliteStore::write_stats`]
//! then counts the writes of every store sharing the writer.
//!
//! - **Options:** the first opener's [`SqliteOptions`] hold, all of them
//!   (clock, busy timeout, readers, durability, batch cap, watch interval),
//!   as long as any store of the process has the database open; a later
//!   open's options are not used. Refusing differing options was the
//!   alternative, but a clock cannot be compared, and two parts of one
//!   program opening the same file should not fail over a reader count.
//! - **Closing:** [`close`](cairnq_core::Store::close) closes one store:
//!   its own calls fail with [`Error::StoreClosed`](cairnq_core::Error::StoreClosed)
//!   from then on, and the other stores keep working. The last store to
//!   close (or be dropped) ends the threads; its `close` waits until every
//!   connection is closed, the writer's last and alone, so SQLite folds
//!   the WAL back into the file and removes `-wal`. The next open after
//!   that starts afresh, with its own options.
//! - **What counts as the same file:** the canonical path (symbolic links,
//!   `.` and `..` resolved). Hard links and bind mounts are not recognized:
//!   they get writers of their own and contend as separate processes do,
//!   which is correct, only slower.
//!
//! # In memory
//!
//! For tests and short-lived tools: [`SqliteStore::in_memory`] (or
//! `SqliteStore::open(":memory:")`) opens a new, private database in memory;
//! `SqliteStore::open("file:NAME?mode=memory&cache=shared")` opens the
//! in-memory database `NAME`, which every such open in this process shares
//! (as above: one writer, the first opener's options). Every open of
//! `:memory:` is a database of its own, as in SQLite. Its limits:
//!
//! - **Not durable.** The database lives as long as a store on it: once
//!   the last one is closed or dropped, it is gone, and a crash loses every
//!   task. [`Synchronous`] has nothing to protect.
//! - **One process.** No other process or SDK can open it (so no worker
//!   process can serve it, and no cross-process watcher runs).
//! - **One connection.** A second connection to `:memory:` would be a
//!   second, empty database, so the writer thread serves reads too: reads
//!   queue behind writes (they run between group commits, after the COMMIT,
//!   never seeing a write that may still roll back), and
//!   [`SqliteOptions::readers`] does not apply.
//! - **No WAL** (SQLite keeps an in-memory database's journal in memory).
//! - A connection of your own to a shared-cache database (for inspection
//!   in a test) shares SQLite's table locks with the store's writer: while
//!   it holds one, writes fail transiently with `SQLITE_LOCKED`, which the
//!   busy timeout does not wait out.
//!
//! Any other `file:` URI (one that names a file) and an empty path are
//! refused with [`Error::Validation`](cairnq_core::Error::Validation): give
//! a file's path. The file-system checks that name the cause of a failure,
//! the watcher (which reads `<path>-shm`) and the registry all need the
//! path, which only SQLite would know from a URI.
//!
//! # Group commit
//!
//! The writer blocks for the first write job, then drains every job already
//! waiting (up to [`SqliteOptions::max_batch`]) and runs them all in one
//! `BEGIN IMMEDIATE` transaction. A failing job fails only its caller: one
//! that failed before changing a row needs no undo; one that failed after
//! writing makes the writer roll back and re-run the batch with a savepoint
//! per job (savepoints are not used up front: each copies every page its
//! job touches, a large share of a batch of small writes). Callers hear
//! their outcome only after the COMMIT that made their write durable; a
//! failed COMMIT fails every job of the batch. A lone job is its own
//! transaction. Under concurrency one fsync covers many writes
//! ([`SqliteStore::write_stats`] counts commits and jobs). A caller that
//! stops awaiting a write does not withdraw it: once sent, it runs.
//!
//! # Durability
//!
//! `synchronous = FULL` by default: an acknowledged write survives a process
//! crash and a power loss. [`Synchronous::Normal`] is an explicit trade-off
//! (faster; a power loss may drop the last acknowledged commits).
//!
//! # Other processes
//!
//! Several processes may open one file. Cross-process write contention is
//! waited out on the writer thread for [`SqliteOptions::busy_timeout`]
//! (5 s by default); past that a write fails with a transient
//! [`Error::Storage`](cairnq_core::Error::Storage). The writer waits with
//! a busy handler of its own, not SQLite's: SQLite's sleeps up to 100 ms
//! between tries while the holder commits and begins again within
//! microseconds, so one process could wait out a whole drain; this one
//! tries again every 1-2 ms, so processes share the lock, and counts each
//! wait ([`SqliteStore::write_stats`]: `lock_waits`, `lock_wait`,
//! `lock_tries`). Opening applies missing
//! migrations, one `BEGIN IMMEDIATE` transaction each, so processes cold
//! starting together never apply one twice; a tool that must not create or
//! migrate anything opens with [`Install::Existing`](cairnq_core::Install::Existing)
//! and reads the ledger with [`SqliteStore::migrations`].
//!
//! Another process's commits cut sleeps in
//! [`Notifications::watch`](cairnq_core::Notifications::watch) short too:
//! while (and only while) someone watches, a watcher thread reads the
//! wal-index header SQLite rewrites on every commit (one `pread` of the
//! `-shm` file, confirmed by `PRAGMA data_version` on its own connection
//! once a second and whenever the header moved) every
//! [`SqliteOptions::watch_interval`] (1 ms by default; stepping down to
//! 16x that after about 0.4 s without any commit, back to 1 ms at the next
//! one) and wakes the watchers when it changed. With nobody watching the
//! watcher is parked.
//!
//! # SQL
//!
//! Every statement comes from `cairnq_protocol::sqlite` (the `.sql` sources
//! of cairnq-protocol), specialized by its `-- when:` flags to the filters
//! and claim form at hand and cached per combination. Connections plan
//! from the statement text alone (`SQLITE_DBCONFIG_ENABLE_QPSG`), so a
//! cached statement is never compiled again for a new bound value (a
//! claim's `limit`). Connection settings
//! (journal mode, foreign keys, synchronous, busy timeout, `query_only` on
//! readers) and transaction control go through rusqlite's typed API; the
//! watcher's `pragma data_version` is the one inline statement.
//!
//! # Known deficiencies
//!
//! - A commit of another process wakes every sleeper of this store (it does
//!   not say which tasks changed), and so does, spuriously, a commit of
//!   this store's own writer: each sleeper then re-polls once.
//! - One writer thread per database per process: its writes are serialized
//!   (batched, not parallel). Stores in different processes (or opened
//!   through a hard link) contend for SQLite's single write lock.
//! - `PRAGMA optimize` runs on the writer connection only (at most once a
//!   minute); reader connections are `query_only` and never write statistics.
//! - Purging a task makes SQLite look for its business keys (the
//!   `on delete cascade` of `cairnq_task_keys`). The shared schema has no
//!   index on `cairnq_task_keys.task_id`; the extension migration
//!   `ext_0004_task_key_index` adds one, so each purged row is one seek (a
//!   file opened with `Install::Existing` without it scans the key table
//!   per purged row: cheap with few keys).
//! - Network file systems are not supported (SQLite's WAL needs shared memory
//!   on one host).
//! - A task's `now` comes from this host's clock; processes on hosts with
//!   skewed clocks sharing one file (over a network share) would disagree.
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "SQLite vs Postgres" (`docs/src/sqlite-vs-postgres.md`) is about
//! this crate.

mod app_writes;
mod busy;
mod commit_watcher;
mod database;
mod dependencies;
mod diagnose;
mod error;
mod exec;
#[doc(hidden)]
pub mod floor;
mod group_commit;
mod inspect;
mod integrity;
mod limited;
mod location;
mod open;
mod options;
mod read;
mod reader;
mod registry;
mod row;
mod schedules;
mod script;
mod sql;
mod steps;
mod store;
mod submits;
mod succeed_with;

pub use app_writes::{AppWrites, ClosurePanicked};
pub use group_commit::WriteStats;
pub use integrity::{Damage, FileHealth, Integrity};
pub use options::{SqliteOptions, Synchronous};
/// The driver whose connection [`SqliteStore::complete_with`] hands the
/// application's closure, at the version this crate is built with.
pub use rusqlite;
pub use store::SqliteStore;
pub use succeed_with::SucceedWith;
