//! `cairnq worker --exec 'CMD'`: runs a command line once per task, so any
//! language can be a cairnq worker; `cairnq worker --serve 'CMD'` keeps one
//! process per slot and exchanges a JSON line per task with it. This module
//! owns the command line and the worker's lifecycle (options, the store,
//! SIGTERM drains, closing the served commands); running a task's command
//! is `cairnq_worker::exec`.

use std::net::SocketAddr;
use std::time::Duration;

use cairnq_core::DEFAULT_GAUGE_INTERVAL;
use cairnq_core::backend::new_worker_id;
use cairnq_worker::exec::{ExecHandler, ExecOptions, ServeHandler};
use cairnq_worker::{Worker, WorkerOptions};

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::humanize;
use crate::log::LogLevel;

/// The contract between the worker and the command, in `--help`.
const CONTRACT: &str = "\
The command runs through `sh -c`, once per task:
  stdin        the payload JSON (a file, written whole before the command starts)
  environment  CAIRNQ_TASK_ID, CAIRNQ_TASK_NAME, CAIRNQ_ATTEMPT (1 first), CAIRNQ_QUEUE
  stdout       the result JSON (empty: null; not JSON: the task fails for good)
  stderr       lines `progress 0.5 optional message` report progress; the last 4 KB
               of the rest go into a failure's error envelope
  exit code    0 succeeded; 65 (EX_DATAERR) failed for good; 75 (EX_TEMPFAIL) or
               any other code failed, retried while attempts are left
A cancel or a lost lease sends the command SIGTERM, then SIGKILL --kill-grace later.
SIGTERM or Ctrl-C to the worker drains: it claims nothing more and running commands
finish (for up to 30 s); a second signal stops at once. A worker that dies outright
(SIGKILL, a crash) takes its commands with it: each command's process group is
SIGKILLed at once, so none runs on beside its task's retry.

Before it opens the database, the worker checks the program the command starts: a
path (a word with a /) must be an executable file, a bare name something sh finds
(a builtin, a program on PATH), and the script given to sh, bash, python3, node,
ruby, perl or php must exist; otherwise it exits 2 and says why, claiming nothing.

Log (stderr, one line per event, --log-level or CAIRNQ_LOG_LEVEL):
  warn   each failed attempt: task id, name, attempt, the exit code or signal and
         the command's last stderr line, and whether the task is retried; a lost
         lease, a failed store call
  info   (the default) also the start, a drain, a canceled command
  error  only what stops the worker; off: nothing; debug: every attempt's end

--serve CMD starts CMD once per slot of --concurrency (when first needed) and keeps
it, one task at a time per process, one JSON line each way (docs: the book's
cross-language chapter):
  stdin   {\"id\",\"name\",\"queue\",\"attempt\",\"max_attempts\",\"payload\"} per task, and
          {\"id\",\"cancel\":true} when that task is canceled (answer within --kill-grace
          or the process is killed and restarted)
  stdout  {\"id\",\"result\":ANY}, or {\"id\",\"error\":{\"message\",\"type\",\"retryable\",...}}
          (retryable unless \"retryable\":false), and any {\"id\",\"progress\":0.5,\"message\":\"...\"}
  stderr  every line goes to the worker's log
A command that ends while it runs a task fails that task retryably and is started
again; a line that is not JSON of the protocol fails the task retryably (logged).
On SIGTERM the worker drains, then closes each command's stdin and waits
--kill-grace for it to exit. A worker that dies outright takes them with it.

-o does not apply: the worker prints no data, only its log on stderr.";

#[derive(Debug, clap::Args)]
#[command(after_help = CONTRACT)]
#[command(group(clap::ArgGroup::new("runs").required(true).args(["exec", "serve"])))]
pub(crate) struct Args {
    /// The command line to run per task (through `sh -c`): payload JSON on
    /// stdin, result JSON on stdout; exit 65 fails for good, other non-zero
    /// codes retry.
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// A command line to start once per slot and keep (through `sh -c`):
    /// one JSON line per task in on stdin, one answer line out on stdout.
    #[arg(long, value_name = "CMD")]
    serve: Option<String>,
    /// Handler names to claim (repeat for several); none: every name.
    #[arg(long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// Queues to claim from (repeat for several).
    #[arg(long = "queue", value_name = "QUEUE", default_value = "default")]
    queues: Vec<String>,
    /// Commands running at once.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Lease per claim, extended by heartbeats while the command runs.
    #[arg(long, default_value = "30s", value_parser = humanize::duration)]
    lease: Duration,
    /// A command running longer is stopped and its attempt fails.
    #[arg(long, value_parser = humanize::duration)]
    max_run: Option<Duration>,
    /// How long a command sent SIGTERM (a cancel, a lost lease, --max-run near) gets to
    /// end before SIGKILL; with --serve, how long a command told to cancel gets to
    /// answer, and one whose stdin was closed at shutdown gets to exit.
    #[arg(long, default_value = "10s", value_parser = humanize::duration)]
    kill_grace: Duration,
    /// How long a finished command's result may wait for others to share
    /// its write while other commands still run (a lone command's result is
    /// written at once); 0 writes each at once.
    #[arg(long, value_name = "DURATION", default_value = "5ms", value_parser = humanize::duration)]
    completion_linger: Duration,
    /// How much the worker logs on stderr (each failed attempt is a warning).
    #[arg(long, value_enum, value_name = "LEVEL", default_value_t = LogLevel::Info, env = "CAIRNQ_LOG_LEVEL")]
    log_level: LogLevel,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464),
    /// queue depths read every 10 s.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
}

impl Args {
    /// The worker options of the arguments, checked by the library.
    fn options(&self) -> Result<WorkerOptions, Failure> {
        // The worker's reports go to the log (crate::log), each at its level.
        let mut options = WorkerOptions::new()
            .queues(self.queues.iter().cloned())
            .concurrency(self.concurrency)
            .lease(self.lease)
            .completion_linger(self.completion_linger)
            .worker_id(new_worker_id());
        if self.metrics_addr.is_some() {
            options = options.queue_gauges(Some(DEFAULT_GAUGE_INTERVAL));
        }
        if let Some(limit) = self.max_run {
            options = options.max_run(limit);
        }
        options.validate()?;
        Ok(options)
    }
}

/// Runs until SIGTERM or SIGINT, then drains (running commands finish); a
/// second signal stops at once.
pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    crate::log::install(args.log_level);
    // Bad arguments, and a command whose program is not there, are refused
    // before the database is opened: nothing is claimed.
    let options = args.options()?;
    let exec_options = ExecOptions::new().kill_grace(args.kill_grace);
    let handler = match (&args.exec, &args.serve) {
        (Some(command), _) => Handlers::Exec(ExecHandler::with_options(command, exec_options)?),
        (None, Some(command)) => Handlers::Serve(ServeHandler::with_options(command, exec_options)?),
        // clap requires one of them.
        (None, None) => return Err(Failure::usage("give --exec CMD or --serve CMD")),
    };
    handler.check_program().await?;
    if let Some(addr) = args.metrics_addr {
        crate::metrics::serve(addr).await?;
    }
    let client = context.installing().await?;
    let mut worker = Worker::new(client, options)?;
    match (&handler, args.names.is_empty()) {
        (Handlers::Exec(exec), true) => worker.exec_all(exec)?,
        (Handlers::Exec(exec), false) => worker.exec(&args.names, exec)?,
        (Handlers::Serve(serve), true) => worker.serve_lines_all(serve)?,
        (Handlers::Serve(serve), false) => worker.serve_lines(&args.names, serve)?,
    };
    tracing::info!(
        "cairnq worker {} {} {:?} for {} on queue(s) {}",
        worker.worker_id(),
        if args.serve.is_some() { "serves" } else { "runs" },
        args.exec.as_deref().or(args.serve.as_deref()).unwrap_or_default(),
        if args.names.is_empty() { "every name".to_string() } else { args.names.join(", ") },
        args.queues.join(", ")
    );
    let ran = worker.run_until_signal().await;
    // Drained (or stopped at once): the served commands' stdin closes.
    if let Handlers::Serve(serve) = &handler {
        serve.close().await;
    }
    ran?;
    Ok(Exit::Ok)
}

/// The handler the command line asks for.
enum Handlers {
    Exec(ExecHandler),
    Serve(ServeHandler),
}

impl Handlers {
    /// Refuses, before the database opens, a command whose program is not there.
    async fn check_program(&self) -> cairnq_core::Result<()> {
        match self {
            Self::Exec(exec) => exec.check_program().await,
            Self::Serve(serve) => serve.check_program().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        args: Args,
    }

    /// The default of `--completion-linger` is the library's, which the
    /// `exec_spawn` benchmark measures.
    #[test]
    fn the_default_linger_is_the_librarys() {
        let line = Line::try_parse_from(["worker", "--exec", "true"]).expect("parsed");
        let options = line.args.options().expect("valid options");
        assert_eq!(options.completion_linger, cairnq_worker::exec::COMPLETION_LINGER);
    }
}
