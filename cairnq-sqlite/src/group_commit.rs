//! The writer thread: the only connection that writes, and group commit.
//!
//! Callers send write jobs (closures over the connection) down a channel.
//! The thread blocks for the first job, drains every job already waiting
//! (up to `max_batch`), and runs them in ONE `BEGIN IMMEDIATE` transaction.
//! A failing job fails only its own caller: a job that failed before
//! changing any row needs no undo; one that failed after writing makes the
//! writer roll back and re-run the batch with a savepoint per job (so it
//! undoes only its own). After the COMMIT (and only
//! then) every caller hears its outcome; a failed COMMIT fails them all.
//! One fsync thus covers every write that arrived while the last one was
//! being made durable.
//!
//! An isolated job ([`isolated_job`]: an application's closure that must
//! run at most once, `SqliteStore::complete_with`) cannot be re-run, so a
//! batch holding one takes the savepoint per job from the start: a failing
//! job then undoes only its own writes, and nothing runs twice.
//!
//! A database in memory has no reader connections (each would be a
//! database of its own): its reads come down the same channel and run
//! here between batches, after the COMMIT of the writes drained with them
//! and outside any transaction, so a read never sees a write whose batch
//! may still roll back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cairnq_core::{Clock, Error, Result};
use cairnq_sql::{Query, Sql};
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::busy::LockWaits;
use crate::error::{explain, guarded, sqlite_error};
use crate::reader::ReadJob;
use crate::sql::query;
use cairnq_core::backend::{Changes, WakeBoard};

/// What the writer thread serves.
pub(crate) enum Work {
    /// A write, group-committed.
    Write(Box<dyn Job>),
    /// A read (only for a database in memory, which has no reader threads).
    Read(ReadJob),
}

/// A write's view of the database: the connection inside the transaction,
/// "now" for this write, and where it records what sleepers care about.
pub(crate) struct WriteCtx<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) now_ms: i64,
    pub(crate) changes: &'a mut Changes,
}

/// Counters of the writer thread, for tests, benchmarks and operators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteStats {
    /// Transactions committed.
    pub commits: u64,
    /// Write jobs run (each caller's write is one job).
    pub jobs: u64,
    /// Transactions whose `BEGIN IMMEDIATE` found SQLite's write lock held
    /// by another connection (another process) and waited for it.
    pub lock_waits: u64,
    /// The time those transactions waited for the lock, in all: the busy
    /// wait of processes sharing one file.
    pub lock_wait: Duration,
    /// Tries for the lock that found it held (a wait is one or more).
    pub lock_tries: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    commits: AtomicU64,
    jobs: AtomicU64,
    /// The writer connection's waits for the write lock (its busy handler
    /// counts into them).
    pub(crate) lock: Arc<LockWaits>,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> WriteStats {
        let (lock_waits, lock_wait, lock_tries) = self.lock.snapshot();
        WriteStats {
            commits: self.commits.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            lock_waits,
            lock_wait,
            lock_tries,
        }
    }
}

/// One caller's write, type-erased so different writes share a batch.
pub(crate) trait Job: Send {
    /// Runs the write; `false` when it failed. May run again after its
    /// batch was rolled back (the write is re-done from scratch then).
    fn run(&mut self, ctx: WriteCtx<'_>) -> bool;
    /// Must run at most once, in a savepoint of its own (its batch then
    /// takes a savepoint per job from the start instead of re-running).
    fn isolated(&self) -> bool;
    /// Replies once the batch's fate is known.
    fn finish(self: Box<Self>, committed: &Result<()>);
}

struct TypedJob<T, F> {
    work: F,
    isolated: bool,
    outcome: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnMut(WriteCtx<'_>) -> Result<T> + Send,
{
    fn run(&mut self, ctx: WriteCtx<'_>) -> bool {
        let (work, conn) = (&mut self.work, ctx.conn);
        let outcome = guarded(|| work(ctx)).map_err(|e| explain(conn, e));
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn isolated(&self) -> bool {
        self.isolated
    }

    fn finish(self: Box<Self>, committed: &Result<()>) {
        let reply = match (self.outcome, committed) {
            (Some(Err(own)), _) => Err(own),
            (_, Err(batch)) => Err(batch.replicate()),
            (Some(ok), Ok(())) => ok,
            (None, Ok(())) => Err(Error::corrupt_row("a write was never run")),
        };
        let _ = self.reply.send(reply);
    }
}

/// Wraps a write closure as a job, with the receiver of its reply.
pub(crate) fn job<T, F>(work: F) -> (Box<dyn Job>, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: Fn(WriteCtx<'_>) -> Result<T> + Send + 'static,
{
    typed_job(work, false)
}

/// Wraps a write closure that must run at most once (an application's
/// code) as an isolated job: its batch gives every job a savepoint from the
/// start, so a failure of this job undoes its writes alone and no batch is
/// re-run.
pub(crate) fn isolated_job<T, F>(work: F) -> (Box<dyn Job>, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnOnce(WriteCtx<'_>) -> Result<T> + Send + 'static,
{
    let mut work = Some(work);
    let once = move |ctx: WriteCtx<'_>| match work.take() {
        Some(work) => work(ctx),
        None => Err(Error::corrupt_row("an isolated write was run twice")),
    };
    typed_job(once, true)
}

fn typed_job<T, F>(work: F, isolated: bool) -> (Box<dyn Job>, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnMut(WriteCtx<'_>) -> Result<T> + Send + 'static,
{
    let (reply, receiver) = oneshot::channel();
    (Box::new(TypedJob { work, isolated, outcome: None, reply }), receiver)
}

/// What the writer thread needs besides its connection.
pub(crate) struct WriterEnv {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) wakes: Arc<WakeBoard>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) max_batch: usize,
}

/// `PRAGMA optimize` at most this often per long-lived connection.
const OPTIMIZE_EVERY: Duration = Duration::from_secs(60);

/// The writer thread's loop; returns when every sender is gone.
pub(crate) fn run_writer(conn: Connection, work: mpsc::Receiver<Work>, env: WriterEnv) {
    let mut last_optimize = Instant::now();
    while let Ok(first) = work.recv() {
        let (mut batch, mut reads) = (Vec::new(), Vec::new());
        let mut next = Some(first);
        while let Some(item) = next {
            match item {
                Work::Write(job) => batch.push(job),
                Work::Read(read) => reads.push(read),
            }
            next = if batch.len() + reads.len() < env.max_batch { work.try_recv().ok() } else { None };
        }
        if !batch.is_empty() {
            run_batch(&conn, batch, &env);
        }
        for read in reads {
            read(&conn);
        }
        if last_optimize.elapsed() >= OPTIMIZE_EVERY {
            last_optimize = Instant::now();
            // Advisory: a failed optimize changes nothing a caller sees.
            let _ = query(&conn, &Query::new(Sql::OptimizePlanner), |_| Ok(()));
        }
    }
}

fn run_batch(conn: &Connection, mut batch: Vec<Box<dyn Job>>, env: &WriterEnv) {
    let mut changes = Changes::default();
    let committed = run_in_transaction(conn, &mut batch, &mut changes, env);
    if let Ok(true) = committed {
        env.counters.commits.fetch_add(1, Ordering::Relaxed);
        env.counters.jobs.fetch_add(batch.len() as u64, Ordering::Relaxed);
        env.wakes.publish(&changes);
    }
    // Every caller gets a replica of a failed batch's error: name the cause
    // once, here on the writer thread, before it is copied.
    let committed = committed.map(|_| ()).map_err(|e| explain(conn, e));
    for job in batch {
        job.finish(&committed);
    }
}

/// Transaction and savepoint control, prepared once per connection
/// (rusqlite's own transactions and savepoints re-parse their SQL on every
/// use: a measurable share of a group commit of small writes).
const BEGIN: &str = "begin immediate";
const COMMIT: &str = "commit";
const ROLLBACK: &str = "rollback";
const SAVEPOINT: &str = "savepoint cairnq_job";
const RELEASE: &str = "release cairnq_job";
const ROLLBACK_TO: &str = "rollback to cairnq_job";

fn control(conn: &Connection, sql: &'static str) -> Result<()> {
    let doing = match sql {
        BEGIN => "take the write lock",
        COMMIT => "commit the writes",
        ROLLBACK | ROLLBACK_TO => "roll back the writes",
        _ => "keep one write apart from the others of its batch",
    };
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute([])).map(|_| ()).map_err(|e| sqlite_error(doing, sql, e))
}

/// How a batch's jobs ran.
enum Ran {
    /// Commit: every job either succeeded or failed without writing.
    Commit,
    /// A job failed after writing: undo everything.
    Undo,
}

/// Runs the batch in one `BEGIN IMMEDIATE` transaction; `Ok(false)` when
/// nothing was committed (a lone job failed and was rolled back).
///
/// Optimistic first pass: no savepoints (each costs a copy of every page
/// its job touches). A job that fails without having changed a row needs
/// no undo. Only when a job failed after writing is the transaction rolled
/// back and the whole batch run again with one savepoint per job. A batch
/// with an isolated job (which must not run twice) takes the savepoints on
/// the first pass, which then always commits what succeeded.
fn run_in_transaction(
    conn: &Connection,
    batch: &mut [Box<dyn Job>],
    changes: &mut Changes,
    env: &WriterEnv,
) -> Result<bool> {
    let attempt = |savepoints: bool, batch: &mut [Box<dyn Job>], changes: &mut Changes| {
        // The wait for another process's write lock happens here.
        env.counters.lock.timed(|| control(conn, BEGIN))?;
        let ran = run_jobs(conn, batch, changes, env.clock.as_ref(), savepoints);
        let outcome = match ran {
            Ok(Ran::Commit) => control(conn, COMMIT).map(|()| true),
            Ok(Ran::Undo) => control(conn, ROLLBACK).map(|()| false),
            Err(e) => Err(e),
        };
        if outcome.is_err() && !conn.is_autocommit() {
            // Best effort: the error already tells every caller the batch failed.
            let _ = control(conn, ROLLBACK);
        }
        outcome
    };
    let isolated = batch.iter().any(|job| job.isolated());
    let committed = attempt(isolated, batch, changes)?;
    if committed || isolated || batch.len() == 1 {
        return Ok(committed);
    }
    *changes = Changes::default();
    attempt(true, batch, changes)
}

/// Runs every job, each in its own savepoint when `savepoints`.
fn run_jobs(
    conn: &Connection,
    batch: &mut [Box<dyn Job>],
    changes: &mut Changes,
    clock: &dyn Clock,
    savepoints: bool,
) -> Result<Ran> {
    for job in batch.iter_mut() {
        if savepoints {
            control(conn, SAVEPOINT)?;
        }
        let before = conn.total_changes();
        let mut own = Changes::default();
        let ok = job.run(WriteCtx { conn, now_ms: clock.now_ms(), changes: &mut own });
        if conn.is_autocommit() {
            // SQLite itself rolled the transaction back (e.g. an I/O error).
            return Err(Error::Storage {
                message: "the write transaction was rolled back by SQLite".into(),
                source: None,
                transient: true,
            });
        }
        match (ok, savepoints) {
            (true, _) => changes.merge(own),
            (false, true) => control(conn, ROLLBACK_TO)?,
            (false, false) if conn.total_changes() != before => return Ok(Ran::Undo),
            (false, false) => {}
        }
        if savepoints {
            control(conn, RELEASE)?;
        }
    }
    Ok(Ran::Commit)
}
