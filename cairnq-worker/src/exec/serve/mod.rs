//! Runs a long-running command that serves many tasks, one JSON line each
//! way per task: `cairnq worker --serve 'CMD'`. Where `--exec` starts a
//! process per task, this starts one per slot of the worker's concurrency
//! and keeps it, so a program that loads a model or opens a connection
//! pays for it once, and a task costs a line each way instead of a process.
//!
//! **One process per slot.** The worker starts the command when a task
//! finds no idle process (so at most `concurrency` of them, started as
//! they are first needed) and gives each process one task at a time: a
//! program is a plain read-a-line, answer-a-line loop, and never sees two
//! tasks interleaved. A program with async work of its own still gets
//! parallelism from several processes.
//!
//! **Lines** (UTF-8 JSON objects, one per line, `\n` ended):
//!
//! - in (stdin), a task: `{"id","name","queue","attempt","max_attempts","payload"}`,
//!   `id` first; `payload` is the stored JSON (made compact).
//! - in, a cancel: `{"id","cancel":true}`, when the task is canceled, its
//!   lease is lost, or it nears the worker's `max_run`. The program may
//!   stop early and answer anything for that id; whatever it does, the
//!   process is killed (its group SIGKILLed) and restarted for the next
//!   task if it has not answered within [`kill_grace`](ExecOptions::kill_grace).
//! - out (stdout), a result: `{"id","result":ANY}`: the task succeeded.
//! - out, an error: `{"id","error":{"message","type","code","retryable","details"}}`
//!   (every field optional; `retryable` defaults to true, `type` to
//!   `ServeError`, `code` to `handler_error`), or `{"id","error":"message"}`.
//! - out, progress: `{"id","progress":0.5,"message":"optional"}`, any
//!   number of them before the answer.
//! - stderr: every line goes to the worker's log (target
//!   `cairnq_worker::serve`, level info, with the command's pid); the last
//!   lines end the error of a command that dies.
//!
//! **Failures.** A line that is not one of the above fails the task
//! retryably (`malformed_line`, the line in `details.line` and in the
//! log); the process is kept, and a later answer for a task it no longer
//! runs is logged and dropped. A line over
//! [`max_stdout_bytes`](ExecOptions::max_stdout_bytes) fails the task for
//! good (`result_too_large`) and the process is restarted. A command that
//! ends (exits, crashes, is killed) while it runs a task fails that task
//! retryably (`serve_exited`, naming the exit code or signal and its last
//! stderr line) and is started again for the next task. `CAIRNQ_SERVE=1`
//! is in its environment.
//!
//! **Lifetime.** Each process is in a process group led by the watchdog
//! of `--exec` (see [`exec`](super)): a worker that dies without a word
//! takes its commands with it. On a graceful stop the worker drains (the
//! tasks running finish, within the drain timeout), then
//! [`ServeHandler::close`] closes each command's stdin, waits up to
//! `kill_grace` for it to exit, and kills what is left.

mod process;
mod protocol;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Error, ErrorEnvelope, Result, human_duration};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use self::process::{Line, Served};
use self::protocol::{ERROR_TYPE, Message};
use super::child::Launcher;
use super::outcome::{self, StopReason, head};
use super::streams::{ProgressLine, write_progress};
use super::{ExecOptions, cancel_seen, max_run_near};
use crate::context::TaskContext;
use crate::handler::{ErasedHandler, Handler, SingleResult};
use crate::options::TaskOptions;
use crate::task_error::TaskError;
use crate::worker::Worker;

/// A command line started once per slot that serves tasks over the line
/// protocol (documented in the book's cross-language chapter, `docs/src/cross-language.md`). Cheap to clone; register it with
/// [`Worker::serve_lines`] or [`Worker::serve_lines_all`], and
/// [`close`](Self::close) it once the worker has stopped.
///
/// ```no_run
/// # async fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
/// use cairnq_worker::exec::ServeHandler;
/// use cairnq_worker::{Worker, WorkerOptions};
///
/// let mut worker = Worker::from_store(store, WorkerOptions::new().concurrency(4))?;
/// let serve = ServeHandler::new("python3 -u resize_server.py")?;
/// worker.serve_lines_all(&serve)?;
/// worker.run_until_signal().await?;
/// serve.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ServeHandler {
    serve: Arc<Serve>,
}

#[derive(Debug)]
struct Serve {
    launcher: Launcher,
    options: ExecOptions,
    /// The processes waiting for a task.
    idle: Mutex<Vec<Served>>,
}

impl ServeHandler {
    /// Serves tasks with `command` (run through `sh -c`) and the default
    /// options. Fails with a validation error when the command is blank or
    /// holds a NUL.
    pub fn new(command: impl Into<String>) -> Result<Self> {
        Self::with_options(command, ExecOptions::default())
    }

    /// [`new`](Self::new) with options: `kill_grace` (how long a command
    /// told to cancel, or to stop at shutdown, gets), `max_stdout_bytes`
    /// (the longest line), `current_dir`.
    pub fn with_options(command: impl Into<String>, options: ExecOptions) -> Result<Self> {
        let launcher = Launcher::new(command.into())?;
        Ok(Self { serve: Arc::new(Serve { launcher, options, idle: Mutex::new(Vec::new()) }) })
    }

    /// Checks the program the command starts is there, as
    /// [`ExecHandler::check_program`](super::ExecHandler::check_program).
    pub async fn check_program(&self) -> Result<()> {
        self.serve.launcher.check_program(&self.serve.options).await
    }

    /// The command line.
    pub fn command(&self) -> &str {
        self.serve.launcher.command()
    }

    /// Ends the idle commands gracefully: closes their stdin (a program's
    /// read loop ends), waits up to `kill_grace` for each to exit, then
    /// kills what is left and reaps it. Call it once the worker stopped (a
    /// task that starts later starts a new process).
    pub async fn close(&self) {
        let idle = std::mem::take(&mut *self.serve.idle.lock());
        let grace = self.serve.options.kill_grace;
        futures::future::join_all(idle.into_iter().map(|served| async move {
            let pid = served.pid();
            let (status, _) = served.end(grace).await;
            tracing::debug!(target: "cairnq_worker::serve", pid, "stopped: {status:?}");
        }))
        .await;
    }

    fn erase(&self) -> ErasedHandler {
        let serve = self.serve.clone();
        ErasedHandler(Handler::Single(Arc::new(move |ctx| Box::pin(serve.clone().run(ctx)))))
    }
}

impl Worker {
    /// Serves the tasks of each of `names` with `handler`'s command. Fails
    /// with a validation error when `names` is empty (use
    /// [`serve_lines_all`](Self::serve_lines_all)) or a name is taken.
    pub fn serve_lines<I, S>(&mut self, names: I, handler: &ServeHandler) -> Result<&mut Self>
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
            return Err(Error::validation("names", "no task names given (Worker::serve_lines_all serves every name)"));
        }
        Ok(self)
    }

    /// Serves every name without a handler of its own with `handler`'s
    /// command (see [`fallback_task`](Self::fallback_task)).
    pub fn serve_lines_all(&mut self, handler: &ServeHandler) -> Result<&mut Self> {
        self.register_fallback(handler.erase())
    }
}

/// How one task's exchange ended, and whether its process may serve again.
enum Ended {
    /// The process answered in step and may take the next task.
    Keep(SingleResult),
    /// The process must go (it died, was killed, or is out of step).
    Drop(SingleResult),
}

impl Serve {
    async fn run(self: Arc<Self>, ctx: TaskContext) -> SingleResult {
        let ran = self.attempt(&ctx).await;
        if let Err(error) = &ran {
            outcome::report(&ctx, error);
        }
        ran
    }

    /// An idle process that is still alive, else a new one.
    fn take_process(&self) -> io::Result<Served> {
        loop {
            let Some(mut served) = self.idle.lock().pop() else { break };
            if !served.ended() {
                return Ok(served);
            }
            // Died between tasks: its end is logged when a task finds it.
            let pid = served.pid();
            tokio::spawn(async move {
                let (status, last) = served.end(Duration::ZERO).await;
                tracing::warn!(target: "cairnq_worker::serve", pid, "ended between tasks ({}){}; restarted",
                    exit_words(&status), last_line_suffix(&last));
            });
        }
        Served::start(&self.launcher, &self.options)
    }

    async fn attempt(&self, ctx: &TaskContext) -> SingleResult {
        if ctx.state().is_canceled() {
            return Err(outcome::stopped(StopReason::Canceled, "", self.options.max_stdout_bytes));
        }
        let served = self.take_process().map_err(|e| {
            failure("serve_spawn_failed", format!("cannot start the command with sh -c: {e}"), true, Map::new())
        })?;
        let (reports, latest) = watch::channel(None);
        let (ended, ()) = tokio::join!(self.exchange(ctx, served, reports), write_progress(ctx, latest));
        let (ended, served) = ended;
        match ended {
            Ended::Keep(result) => {
                if let Some(served) = served {
                    self.idle.lock().push(served);
                }
                result
            }
            Ended::Drop(result) => result,
        }
    }

    /// Sends the task and reads lines until its answer, the command's end,
    /// or a stop the command does not answer in time. Returns the process
    /// unless it was ended here.
    async fn exchange(
        &self,
        ctx: &TaskContext,
        mut served: Served,
        reports: watch::Sender<Option<ProgressLine>>,
    ) -> (Ended, Option<Served>) {
        let id = ctx.task_id();
        let grace = self.options.kill_grace;
        if served.send(&protocol::task_line(ctx)).await.is_err() {
            return (Ended::Drop(Err(self.died(ctx, served).await)), None);
        }
        let stop = async {
            tokio::select! {
                () = cancel_seen(ctx) => StopReason::Canceled,
                () = ctx.on_lost_lease() => StopReason::LostLease,
                limit = max_run_near(ctx, grace) => StopReason::MaxRun(limit),
            }
        };
        tokio::pin!(stop);
        let mut stopped: Option<StopReason> = None;
        let deadline = tokio::time::sleep(Duration::MAX / 4);
        tokio::pin!(deadline);
        loop {
            let line = tokio::select! {
                line = served.next_line() => line,
                reason = &mut stop, if stopped.is_none() => {
                    stopped = Some(reason);
                    // A command that cannot hear it is killed at the deadline.
                    let _ = served.send(&protocol::cancel_line(id)).await;
                    deadline.as_mut().reset(tokio::time::Instant::now() + grace);
                    continue;
                }
                () = &mut deadline => {
                    let reason = stopped.unwrap_or(StopReason::Canceled);
                    let pid = served.pid();
                    let _ = served.kill().await;
                    tracing::info!(target: "cairnq_worker::serve", pid, task_id = %id,
                        "killed: it did not answer the cancel of its task within {}; restarted", human_duration(grace));
                    return (Ended::Drop(Err(outcome::stopped(reason, "", self.options.max_stdout_bytes))), None);
                }
            };
            let text = match line {
                Ok(Line::Text(text)) => text,
                Ok(Line::End) | Err(_) => return (Ended::Drop(Err(self.died(ctx, served).await)), None),
                Ok(Line::TooLong) => {
                    let _ = served.kill().await;
                    let limit = self.options.max_stdout_bytes;
                    let message =
                        format!("the command wrote a line longer than {limit} bytes (the result's limit); restarted");
                    return (Ended::Drop(Err(failure("result_too_large", message, false, Map::new()))), None);
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            let message = match protocol::parse(&text) {
                Ok(message) => message,
                Err(why) => {
                    let pid = served.pid();
                    tracing::warn!(target: "cairnq_worker::serve", pid, task_id = %id, "malformed line ({why}): {text}");
                    let message = format!("the command wrote a line that is not a message of the protocol: {why}");
                    let details = Map::from_iter([("line".to_string(), json!(head(&text, 1000)))]);
                    return (Ended::Keep(Err(failure("malformed_line", message, true, details))), Some(served));
                }
            };
            if message.id() != id {
                tracing::warn!(target: "cairnq_worker::serve", pid = served.pid(), task_id = %id,
                    "dropped a line for task {}, which this process is not running: {text}", message.id());
                continue;
            }
            let outcome = match message {
                Message::Progress { value, message, .. } => {
                    reports.send_replace(Some(ProgressLine { value, message }));
                    continue;
                }
                Message::Result { result, .. } => Ok(result),
                Message::Error { error, .. } => Err(error),
            };
            let outcome = match stopped {
                Some(reason) => Err(outcome::stopped(reason, "", self.options.max_stdout_bytes)),
                None => outcome,
            };
            return (Ended::Keep(outcome), Some(served));
        }
    }

    /// The command ended while it ran the task: the task's retryable error.
    async fn died(&self, ctx: &TaskContext, served: Served) -> TaskError {
        let pid = served.pid();
        let (status, last) = served.end(self.options.kill_grace).await;
        let words = exit_words(&status);
        tracing::warn!(target: "cairnq_worker::serve", pid, task_id = %ctx.task_id(),
            "ended ({words}) while running a task{}; restarted for the next task", last_line_suffix(&last));
        let mut details = Map::new();
        if let Ok(status) = &status {
            use std::os::unix::process::ExitStatusExt;
            details.insert("exit_code".into(), json!(status.code()));
            details.insert("signal".into(), json!(status.signal()));
        }
        details.insert("stderr".into(), json!(last));
        let message = format!("the serve command {words} while running the task{}", last_line_suffix(&last));
        failure("serve_exited", message, true, details)
    }
}

/// `exited with code 3`, `was killed by signal 9`, ...
fn exit_words(status: &io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            _ => "ended".to_string(),
        },
        Err(e) => format!("ended (cannot wait for it: {e})"),
    }
}

fn last_line_suffix(last: &str) -> String {
    if last.is_empty() { String::new() } else { format!(": {}", head(last, 200)) }
}

/// A `ServeError` envelope.
fn failure(code: &str, message: String, retryable: bool, details: Map<String, Value>) -> TaskError {
    let envelope = if retryable { ErrorEnvelope::retryable(code, message) } else { ErrorEnvelope::new(code, message) };
    TaskError::from_envelope(envelope.error_type(ERROR_TYPE)).details(Value::Object(details))
}
