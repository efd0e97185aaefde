//! Runs a shell command line as a handler, once per task: this is what
//! makes any language a cairnq worker (`cairnq worker --exec 'CMD ARGS'`).
//! Needs the `exec` feature (Unix).
//!
//! Each task runs `sh -c COMMAND` (so pipes and quoting work) in a process
//! group of its own, led by that shell (so `kill 0` and `kill -- -$$` reach
//! the command's whole group). One watchdog process per handler kills the
//! groups of a worker that died (module `watchdog`). A command line that
//! is one program and its plain arguments (`python3 resize.py --quality
//! 80`, not a builtin, no quoting, expansion or operator) is `exec`ed by
//! that shell: the program replaces it, so a task starts one process fewer
//! (module `program`). [`ServeHandler`] (`cairnq worker --serve`) instead
//! keeps one process per slot and exchanges a JSON line per task with it
//! (module `serve`).
//!
//! - **stdin** is the payload JSON, exactly as stored, written whole before
//!   the command starts, so a command never runs on a payload cut short: a
//!   pipe already holding all of it (up to 64 KiB), or else an anonymous
//!   temporary file (in `TMPDIR`). Read it to its end; do not seek it.
//! - **environment**: `CAIRNQ_TASK_ID`, `CAIRNQ_TASK_NAME`, `CAIRNQ_ATTEMPT`
//!   (1 on the first claim) and `CAIRNQ_QUEUE`, on top of the worker's own.
//! - **stdout** is the result: one JSON document (surrounding whitespace is
//!   ignored; empty means `null`), at most
//!   [`max_stdout_bytes`](ExecOptions::max_stdout_bytes).
//! - **stderr**: a line `progress 0.5 optional message` reports progress
//!   (a value in 0..1, then an optional message); every other line is kept,
//!   and the last 4 KB of them go into the error envelope of a failure
//!   (`details.stderr`; the last line also ends the message).
//! - **cancel or lost lease**: the group gets SIGTERM (within about a
//!   second of the cancel, whatever the lease), then SIGKILL after
//!   [`kill_grace`](ExecOptions::kill_grace). With the worker's `max_run`,
//!   the group gets SIGTERM `kill_grace` before it (at most half of
//!   `max_run` before), and the task a retryable `handler_timeout`. An
//!   attempt dropped unfinished (at `max_run`, a drain timeout, a stop at
//!   once) kills the group at once.
//!   When the shell exits, whatever it left running in its group is killed.
//! - **worker shutdown** drains: running commands finish (a Ctrl-C on the
//!   worker's terminal does not reach them; they are in their own group).
//! - **worker death** (SIGKILL, a crash, the OOM killer): the watchdog sees
//!   the worker's end of its pipe close and SIGKILLs every group at once, so
//!   no command runs on past its lease beside its own retry. A process
//!   that left the group (`setsid`) is out of reach, as for every stop.
//!
//! | the command | the task |
//! |---|---|
//! | exits 0, stdout JSON (or empty) | succeeded with it (`null` when empty) |
//! | exits 0, stdout not JSON | failed for good, `invalid_result` |
//! | writes more than `max_stdout_bytes` | stopped, failed for good, `result_too_large` |
//! | exits 65 (`EX_DATAERR`) | failed for good, `exit_status` |
//! | exits 75 (`EX_TEMPFAIL`), or any other non-zero code | retried, `exit_status` |
//! | killed by a signal | retried, `exit_signal` |
//! | stopped by a cancel | canceled |
//! | stopped near `max_run` | retried, `handler_timeout` |
//!
//! Every failure's envelope has type `ExecError`; `details` hold
//! `stderr` and, as the case may be, `exit_code` or `signal`.
//!
//! ```no_run
//! # async fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
//! use std::time::Duration;
//! use cairnq_worker::exec::{ExecHandler, ExecOptions};
//! use cairnq_worker::{Worker, WorkerOptions};
//!
//! let mut worker = Worker::from_store(store, WorkerOptions::new().concurrency(4))?;
//! // One task name, a Python script:
//! let resize = ExecHandler::new("python3 resize.py --quality 80")?;
//! worker.exec(["resize"], &resize)?;
//! // Every other name on the queues, with a shorter grace after SIGTERM:
//! let options = ExecOptions::new().kill_grace(Duration::from_secs(2));
//! worker.exec_all(&ExecHandler::with_options(r#"jq '{seen: .}'"#, options)?)?;
//! worker.run_until_signal().await
//! # }
//! ```

mod child;
mod outcome;
mod program;
mod serve;
mod streams;
mod watchdog;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Error, Result};
use tokio::sync::Notify;

use self::child::Launcher;
pub use self::outcome::{EXIT_PERMANENT, EXIT_RETRY};
use self::outcome::{Ran, StopReason};
pub use self::serve::ServeHandler;
use crate::context::TaskContext;
use crate::handler::{ErasedHandler, Handler, SingleResult};
use crate::options::TaskOptions;
use crate::worker::Worker;

/// The [`completion_linger`](crate::WorkerOptions::completion_linger) of
/// `cairnq worker --exec` and `--serve`: a command's start costs a
/// millisecond or more, so a result this much later goes unnoticed, while
/// a commit for every one or two completions was the largest share of
/// what the worker added to a command (BENCHMARKS.md, 2026-12-05T20:30Z).
pub const COMPLETION_LINGER: Duration = Duration::from_millis(5);

/// How an [`ExecHandler`] runs its command.
///
/// ```
/// use std::time::Duration;
/// use cairnq_worker::exec::ExecOptions;
/// let options = ExecOptions::new().kill_grace(Duration::from_secs(5)).max_stdout_bytes(1 << 20);
/// assert_eq!(options.kill_grace, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecOptions {
    /// How long a command stopped with SIGTERM (a cancel, a lost lease)
    /// gets before SIGKILL; also how long its stdout and stderr may stay
    /// open after the shell exited (held by a process that left its group)
    /// before the attempt fails. Default 10 s.
    pub kill_grace: Duration,
    /// The most stdout a command may write (its result); past it the
    /// command is stopped and the task fails for good. Default 16 MiB.
    pub max_stdout_bytes: u64,
    /// The command's working directory; `None`: the worker's.
    pub current_dir: Option<PathBuf>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        Self { kill_grace: Duration::from_secs(10), max_stdout_bytes: 16 << 20, current_dir: None }
    }
}

impl ExecOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits this long after SIGTERM before SIGKILL.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Lets a command's stdout be at most this long.
    pub fn max_stdout_bytes(mut self, bytes: u64) -> Self {
        self.max_stdout_bytes = bytes;
        self
    }

    /// Runs the command in this directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }
}

/// A shell command line that runs once per task (see the [module
/// docs](self) for the contract). Cheap to clone; register it with
/// [`Worker::exec`] for some names or [`Worker::exec_all`] for every name.
#[derive(Debug, Clone)]
pub struct ExecHandler {
    exec: Arc<Exec>,
}

#[derive(Debug)]
struct Exec {
    launcher: Launcher,
    options: ExecOptions,
}

impl ExecHandler {
    /// Runs `command` through `sh -c` with the default options. Fails with
    /// a validation error when the command is blank or holds a NUL.
    ///
    /// ```
    /// use cairnq_worker::exec::ExecHandler;
    /// assert!(ExecHandler::new("./ingest.sh | tee -a ingest.log").is_ok());
    /// assert!(ExecHandler::new("  ").is_err());
    /// ```
    pub fn new(command: impl Into<String>) -> Result<Self> {
        Self::with_options(command, ExecOptions::default())
    }

    /// [`new`](Self::new) with options.
    pub fn with_options(command: impl Into<String>, options: ExecOptions) -> Result<Self> {
        Ok(Self { exec: Arc::new(Exec { launcher: Launcher::new(command.into())?, options }) })
    }

    /// Checks, before any task runs, that the program the command line
    /// starts is there: its first word, when the shell reads it as written,
    /// must be an executable file (a word with a `/`, relative to
    /// [`current_dir`](ExecOptions::current_dir)) or something `sh` finds
    /// (a builtin, a program on `PATH`); and the script a well-known
    /// interpreter is given (`python3 resize.py`, `sh ./run.sh`) must
    /// exist. Words holding quotes, expansions or assignments are taken as
    /// they are. Fails with a validation error saying what is wrong, so a
    /// worker can refuse to start instead of failing every task with
    /// exit 127. `cairnq worker --exec` runs it before it opens the
    /// database.
    ///
    /// ```
    /// use cairnq_worker::exec::ExecHandler;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// assert!(ExecHandler::new("cat | wc -c").expect("a command").check_program().await.is_ok());
    /// let wrong = ExecHandler::new("./no/such/resize.sh --fast").expect("a command");
    /// let refused = wrong.check_program().await.expect_err("no such file");
    /// assert!(refused.to_string().contains("./no/such/resize.sh does not exist"), "{refused}");
    /// # }
    /// ```
    pub async fn check_program(&self) -> Result<()> {
        self.exec.launcher.check_program(&self.exec.options).await
    }

    /// The command line.
    pub fn command(&self) -> &str {
        self.exec.launcher.command()
    }

    /// The options.
    pub fn options(&self) -> &ExecOptions {
        &self.exec.options
    }

    fn erase(&self) -> ErasedHandler {
        let exec = self.exec.clone();
        ErasedHandler(Handler::Single(Arc::new(move |ctx| Box::pin(exec.clone().run(ctx)))))
    }
}

impl Worker {
    /// Runs `handler`'s command for the tasks of each of `names`. Fails
    /// with a validation error when `names` is empty (use
    /// [`exec_all`](Self::exec_all)) or a name is taken.
    pub fn exec<I, S>(&mut self, names: I, handler: &ExecHandler) -> Result<&mut Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut any = false;
        for name in names {
            self.register(name.as_ref(), TaskOptions::new(), handler.erase())?;
            any = true;
        }
        if !any {
            return Err(Error::validation("names", "no task names given (Worker::exec_all runs every name)"));
        }
        Ok(self)
    }

    /// Runs `handler`'s command for every name without a handler of its
    /// own: the worker claims EVERY name on its queues (see
    /// [`fallback_task`](Self::fallback_task)).
    pub fn exec_all(&mut self, handler: &ExecHandler) -> Result<&mut Self> {
        self.register_fallback(handler.erase())
    }
}

/// How often a running command's task is asked whether it was canceled
/// (free while the heartbeat answered within the last second).
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// Resolves when a cancel is requested: flagged by the heartbeat, or found
/// by asking every [`CANCEL_POLL`], so a long lease (a heartbeat every
/// lease / 3) does not delay the SIGTERM.
async fn cancel_seen(ctx: &TaskContext) {
    let polled = async {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            if ctx.canceled().await {
                return;
            }
        }
    };
    tokio::select! {
        () = ctx.on_cancel() => {}
        () = polled => {}
    }
}

/// Resolves, with the worker's `max_run`, when the attempt is a grace
/// period short of it (at most half of it): the command then gets SIGTERM
/// and the rest of `max_run` to end, as after a cancel; at `max_run` the
/// worker abandons the attempt and the group is killed. Never without
/// `max_run`.
async fn max_run_near(ctx: &TaskContext, grace: Duration) -> Duration {
    let Some(limit) = ctx.max_run() else { return std::future::pending().await };
    tokio::time::sleep(limit - grace.min(limit / 2)).await;
    limit
}

impl Exec {
    /// Runs the command for one attempt, and tells the worker's log when
    /// it failed.
    async fn run(self: Arc<Self>, ctx: TaskContext) -> SingleResult {
        let ran = self.attempt(&ctx).await;
        if let Err(error) = &ran {
            outcome::report(&ctx, error);
        }
        ran
    }

    async fn attempt(&self, ctx: &TaskContext) -> SingleResult {
        if ctx.state().is_canceled() {
            return Err(outcome::stopped(StopReason::Canceled, "", self.options.max_stdout_bytes));
        }
        let spawned = child::spawn(&self.launcher, &self.options, ctx).await;
        let (mut child, mut group) = spawned.map_err(outcome::not_started)?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let overflow = Notify::new();
        let exited = Notify::new();
        let streams = async {
            tokio::join!(
                streams::read_stdout(stdout, self.options.max_stdout_bytes, &overflow),
                streams::watch_stderr(stderr, ctx),
            )
        };
        // Whatever the shell left in its group is killed when it exits, so
        // the pipes close at once; one held by a process that left the group
        // gets the grace period, then is given up on.
        let bounded_streams = async {
            tokio::select! {
                // Output already complete wins over a grace just over.
                biased;
                (stdout, stderr) = streams => Some((stdout, stderr)),
                () = async { exited.notified().await; tokio::time::sleep(self.options.kill_grace).await } => None,
            }
        };
        let stop = async {
            tokio::select! {
                () = cancel_seen(ctx) => StopReason::Canceled,
                () = ctx.on_lost_lease() => StopReason::LostLease,
                limit = max_run_near(ctx, self.options.kill_grace) => StopReason::MaxRun(limit),
                () = overflow.notified() => StopReason::StdoutTooLarge,
            }
        };
        let exit = async {
            let ended = child::wait(&mut child, &mut group, self.options.kill_grace, stop).await;
            exited.notify_one();
            ended
        };
        let (streams, (status, stopped)) = tokio::join!(bounded_streams, exit);
        outcome::settle(Ran { status, stopped, streams, max_stdout_bytes: self.options.max_stdout_bytes })
    }
}
