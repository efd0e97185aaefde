//! The writer thread: the only connection that writes, and group commit.
//!
//! Callers send write jobs (closures over the connection) down a channel.
//! The thread blocks for the first job, drains every job already waiting
//! (up to `max_batch`), and runs them in ONE `BEGIN IMMEDIATE` transaction,
//! each inside its own savepoint: a failing job rolls back only its own
//! savepoint and fails only its own caller. After the COMMIT (and only
//! then) every caller hears its outcome; a failed COMMIT fails them all.
//! One fsync thus covers every write that arrived while the last one was
//! being made durable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cairnq_core::{Clock, Error, Result};
use cairnq_protocol::sqlite;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use crate::error::{guarded, replicate, sqlite_error};
use crate::sql::{Args, query, render};
use crate::wake::{Changes, WakeBoard};

/// A write's view of the database: the connection inside its savepoint,
/// "now" for this write, and where it records what sleepers care about.
pub(crate) struct WriteCtx<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) now_ms: i64,
    pub(crate) changes: &'a mut Changes,
}

/// Counters of the writer thread, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteStats {
    /// Transactions committed.
    pub commits: u64,
    /// Write jobs run (each caller's write is one job).
    pub jobs: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    commits: AtomicU64,
    jobs: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> WriteStats {
        WriteStats { commits: self.commits.load(Ordering::Relaxed), jobs: self.jobs.load(Ordering::Relaxed) }
    }
}

/// One caller's write, type-erased so different writes share a batch.
pub(crate) trait Job: Send {
    /// Runs the write; `false` when it failed (its savepoint is rolled back).
    fn run(&mut self, ctx: WriteCtx<'_>) -> bool;
    /// Replies once the batch's fate is known.
    fn finish(self: Box<Self>, committed: &Result<()>);
}

struct TypedJob<T, F> {
    work: Option<F>,
    outcome: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnOnce(WriteCtx<'_>) -> Result<T> + Send,
{
    fn run(&mut self, ctx: WriteCtx<'_>) -> bool {
        let Some(work) = self.work.take() else { return false };
        let outcome = guarded(|| work(ctx));
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, committed: &Result<()>) {
        let reply = match (self.outcome, committed) {
            (Some(Err(own)), _) => Err(own),
            (_, Err(batch)) => Err(replicate(batch)),
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
    F: FnOnce(WriteCtx<'_>) -> Result<T> + Send + 'static,
{
    let (reply, receiver) = oneshot::channel();
    (Box::new(TypedJob { work: Some(work), outcome: None, reply }), receiver)
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
pub(crate) fn run_writer(mut conn: Connection, jobs: mpsc::Receiver<Box<dyn Job>>, env: WriterEnv) {
    let mut last_optimize = Instant::now();
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < env.max_batch {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        run_batch(&mut conn, batch, &env);
        if last_optimize.elapsed() >= OPTIMIZE_EVERY {
            last_optimize = Instant::now();
            // Advisory: a failed optimize changes nothing a caller sees.
            let _ = query(&conn, render(&sqlite::OPTIMIZE_PLANNER, &[]), &Args::new(), |_| Ok(()));
        }
    }
}

fn run_batch(conn: &mut Connection, mut batch: Vec<Box<dyn Job>>, env: &WriterEnv) {
    let mut changes = Changes::default();
    let committed = run_in_transaction(conn, &mut batch, &mut changes, env.clock.as_ref());
    if committed.is_ok() {
        env.counters.commits.fetch_add(1, Ordering::Relaxed);
        env.counters.jobs.fetch_add(batch.len() as u64, Ordering::Relaxed);
        env.wakes.publish(&changes);
    }
    for job in batch {
        job.finish(&committed);
    }
}

fn run_in_transaction(
    conn: &mut Connection,
    batch: &mut [Box<dyn Job>],
    changes: &mut Changes,
    clock: &dyn Clock,
) -> Result<()> {
    let fail = |what| move |e| sqlite_error(what, e);
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail("begin immediate"))?;
    for job in batch.iter_mut() {
        let savepoint = tx.savepoint().map_err(fail("savepoint"))?;
        let mut own = Changes::default();
        let ok = job.run(WriteCtx { conn: &savepoint, now_ms: clock.now_ms(), changes: &mut own });
        if ok {
            savepoint.commit().map_err(fail("release savepoint"))?;
            changes.merge(own);
        } else {
            // The default drop behavior: roll back to the savepoint, release it.
            savepoint.finish().map_err(fail("rollback to savepoint"))?;
        }
    }
    tx.commit().map_err(fail("commit"))
}
