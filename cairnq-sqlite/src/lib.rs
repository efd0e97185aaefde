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
//! SQLite calls block, so none runs on the async runtime. A
//! [`SqliteStore`] owns one **writer thread** with the only connection that
//! writes (claims are writes too) and a few **reader threads** (2 by
//! default) with their own connections for get, list, stats, counts and the
//! claim probe. In WAL mode readers see the last commit while the writer
//! works, so reads never queue behind writes. Callers hand work to a thread
//! over a channel and await a oneshot reply.
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
//! [`Error::Storage`](cairnq_core::Error::Storage). Opening applies missing
//! migrations, one `BEGIN IMMEDIATE` transaction each, so processes cold
//! starting together never apply one twice.
//!
//! Another process's commits cut sleeps in
//! [`Store::watch_for_change`](cairnq_core::Store::watch_for_change) short too:
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
//! and claim form at hand and cached per combination. Connection settings
//! (journal mode, foreign keys, synchronous, busy timeout, `query_only` on
//! readers) and transaction control go through rusqlite's typed API; the
//! watcher's `pragma data_version` is the one inline statement.
//!
//! # Known deficiencies
//!
//! - A commit of another process wakes every sleeper of this store (it does
//!   not say which tasks changed), and so does, spuriously, a commit of
//!   this store's own writer: each sleeper then re-polls once.
//! - One writer thread per store: a store's writes are serialized (batched,
//!   not parallel), and two stores on one file contend for SQLite's single
//!   write lock.
//! - `PRAGMA optimize` runs on the writer connection only (at most once a
//!   minute); reader connections are `query_only` and never write statistics.
//! - Purging a task makes SQLite look for its business keys (the
//!   `on delete cascade` of `cairnq_task_keys`), and the shared schema has
//!   no index on `cairnq_task_keys.task_id`: each purged row scans the key
//!   table. Cheap with few keys; a new shared migration would fix it.
//! - Network file systems are not supported (SQLite's WAL needs shared memory
//!   on one host).
//! - A task's `now` comes from this host's clock; processes on hosts with
//!   skewed clocks sharing one file (over a network share) would disagree.

mod commit_watcher;
mod diagnose;
mod error;
mod exec;
mod group_commit;
mod local_wakeups;
mod open;
mod options;
mod read;
mod reader;
mod row;
mod sql;
mod store;

pub use group_commit::WriteStats;
pub use options::{SqliteOptions, Synchronous};
pub use store::SqliteStore;
