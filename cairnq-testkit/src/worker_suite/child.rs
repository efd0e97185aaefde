//! The child worker process of the crash and graceful-stop tests: the
//! `cairnq-test-worker` binary's logic, and how a test finds and starts it.
//!
//! Killing a real process is the only honest way to test what a crash does
//! to leases, so the worker under test runs in its own process, opening the
//! same database from a [`StoreLocator`] given on its command line.
//!
//! ```text
//! cairnq-test-worker --sqlite PATH --mode hang|sleep|record [--lease-ms N] [--drain-ms N] [--concurrency N]
//!                    [--poll-ms N] [--no-listen] [--report-issues] [--log PATH]
//! ```
//!
//! - `hang`: handler `crash` prints `started <task id>` and never returns.
//! - `sleep`: handler `sleep` sleeps `payload.ms` milliseconds and returns
//!   `{"slept": ms}`.
//! - `record` (needs `--log`): handler `record` keeps an account of every run
//!   in the log file, so a test that SIGKILLs workers can tell afterwards
//!   which runs happened and who cut them short (see [`RecordLine`]). It
//!   appends `start <task id> <attempt> <worker id> <epoch ms>`, sleeps
//!   `payload.ms`, appends `end <task id> <attempt> <worker id>`, and returns
//!   `{"worker": <worker id>, "pid": <pid>, "attempt": <attempt>}`. The log
//!   opens with `child <pid> <worker id>` and gets an `issue <text>` line per
//!   [`WorkerIssue`]. Each line is one unbuffered `write`, so it is in the
//!   kernel before the handler goes on and a SIGKILL cannot take it back.
//!
//! With `--report-issues` every [`WorkerIssue`] prints as `issue <text>`. A
//! Postgres store opened with `--no-listen` has no LISTEN connection, so the
//! worker finds tasks by polling every `--poll-ms` only.
//!
//! The worker runs until SIGINT/SIGTERM, then drains and exits 0.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use cairnq_core::{Error, Result, Store};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use serde_json::{Value, json};

use crate::StoreLocator;

/// What the child worker's handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildMode {
    /// `crash`: announce the start, then never return.
    Hang,
    /// `sleep`: sleep `payload.ms`, then succeed.
    Sleep,
    /// `record`: log the run's start and end around a `payload.ms` sleep,
    /// then succeed naming the worker.
    Record,
}

/// The child's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildArgs {
    /// The database to open.
    pub locator: StoreLocator,
    /// The handler to run.
    pub mode: ChildMode,
    /// Lease length.
    pub lease_ms: u64,
    /// Drain timeout on SIGTERM.
    pub drain_ms: u64,
    /// Worker concurrency.
    pub concurrency: usize,
    /// The worker's poll interval.
    pub poll_ms: u64,
    /// Whether a Postgres store holds a LISTEN connection (push wakeups).
    pub listen: bool,
    /// Print every [`WorkerIssue`] as an `issue <text>` stdout line.
    pub report_issues: bool,
    /// The run log of [`ChildMode::Record`] (appended to, created if absent).
    pub log: Option<PathBuf>,
}

impl ChildArgs {
    /// Defaults: lease 1 s, drain 1 s, concurrency 1, poll every 50 ms,
    /// push wakeups on, issues not printed, no log.
    pub fn new(locator: StoreLocator, mode: ChildMode) -> Self {
        Self {
            locator,
            mode,
            lease_ms: 1_000,
            drain_ms: 1_000,
            concurrency: 1,
            poll_ms: 50,
            listen: true,
            report_issues: false,
            log: None,
        }
    }

    /// As command-line arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = match &self.locator {
            StoreLocator::Sqlite { path } => vec!["--sqlite".to_string(), path.display().to_string()],
            StoreLocator::Postgres { dsn, schema } => vec!["--postgres".into(), dsn.clone(), schema.clone()],
        };
        let mode = match self.mode {
            ChildMode::Hang => "hang",
            ChildMode::Sleep => "sleep",
            ChildMode::Record => "record",
        };
        args.extend(["--mode".into(), mode.into(), "--lease-ms".into(), self.lease_ms.to_string()]);
        args.extend(["--drain-ms".into(), self.drain_ms.to_string()]);
        args.extend(["--concurrency".into(), self.concurrency.to_string()]);
        args.extend(["--poll-ms".into(), self.poll_ms.to_string()]);
        if !self.listen {
            args.push("--no-listen".into());
        }
        if self.report_issues {
            args.push("--report-issues".into());
        }
        if let Some(log) = &self.log {
            args.extend(["--log".into(), log.display().to_string()]);
        }
        args
    }

    /// Parses what [`to_args`](Self::to_args) wrote.
    pub fn parse(args: &[String]) -> std::result::Result<Self, String> {
        let mut locator = None;
        let mut mode = None;
        let mut parsed = Self::new(StoreLocator::Sqlite { path: PathBuf::new() }, ChildMode::Sleep);
        let mut rest = args.iter();
        while let Some(flag) = rest.next() {
            let mut value = || rest.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--sqlite" => locator = Some(StoreLocator::Sqlite { path: PathBuf::from(value()?) }),
                "--postgres" => locator = Some(StoreLocator::Postgres { dsn: value()?, schema: value()? }),
                "--mode" => mode = Some(parse_mode(&value()?)?),
                "--lease-ms" => parsed.lease_ms = number(flag, &value()?)?,
                "--drain-ms" => parsed.drain_ms = number(flag, &value()?)?,
                "--concurrency" => parsed.concurrency = number(flag, &value()?)?,
                "--poll-ms" => parsed.poll_ms = number(flag, &value()?)?,
                "--no-listen" => parsed.listen = false,
                "--report-issues" => parsed.report_issues = true,
                "--log" => parsed.log = Some(PathBuf::from(value()?)),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        parsed.locator = locator.ok_or("--sqlite or --postgres is required")?;
        parsed.mode = mode.ok_or("--mode is required")?;
        if parsed.mode == ChildMode::Record && parsed.log.is_none() {
            return Err("--mode record needs --log".into());
        }
        Ok(parsed)
    }
}

fn parse_mode(mode: &str) -> std::result::Result<ChildMode, String> {
    match mode {
        "hang" => Ok(ChildMode::Hang),
        "sleep" => Ok(ChildMode::Sleep),
        "record" => Ok(ChildMode::Record),
        other => Err(format!("unknown mode {other:?}")),
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> std::result::Result<T, String> {
    text.parse().map_err(|_| format!("{flag} needs a number, got {text:?}"))
}

/// Opens the store a locator names, with the backends this build has.
pub async fn open_store(locator: &StoreLocator) -> Result<Arc<dyn Store>> {
    match locator {
        #[cfg(feature = "sqlite")]
        StoreLocator::Sqlite { path } => Ok(Arc::new(cairnq_sqlite::SqliteStore::open(path).await?)),
        #[cfg(feature = "postgres")]
        StoreLocator::Postgres { dsn, schema } => Ok(Arc::new(crate::postgres::open(dsn, schema).await?)),
        // Reached only when a backend's feature is off in this build.
        #[allow(unreachable_patterns)]
        _ => Err(Error::UnsupportedBackend { operation: "open_store", backend: "cairnq-test-worker" }),
    }
}

/// Opens the store a locator names without push wakeups: a Postgres store
/// with no LISTEN connection (other backends as [`open_store`] does).
async fn open_store_polling(locator: &StoreLocator) -> Result<Arc<dyn Store>> {
    match locator {
        #[cfg(feature = "postgres")]
        StoreLocator::Postgres { dsn, schema } => {
            let options = cairnq_postgres::PostgresOptions::new().schema(schema).pool_size(4).listen(false);
            Ok(Arc::new(cairnq_postgres::PostgresStore::connect_with(dsn, options).await?))
        }
        other => open_store(other).await,
    }
}

/// The child worker: opens the store, registers the mode's handler, and
/// runs until SIGINT/SIGTERM.
pub async fn run_child(args: &ChildArgs) -> Result<()> {
    let store = if args.listen { open_store(&args.locator).await? } else { open_store_polling(&args.locator).await? };
    let log = match &args.log {
        Some(path) => Some(Arc::new(RunLog::open(path).map_err(|e| Error::storage("cannot open the run log", e))?)),
        None => None,
    };
    let mut options = WorkerOptions::new()
        .lease(Duration::from_millis(args.lease_ms))
        .drain_timeout(Duration::from_millis(args.drain_ms))
        .concurrency(args.concurrency)
        .poll_interval(Duration::from_millis(args.poll_ms));
    let (print, issue_log) = (args.report_issues, log.clone());
    if print || issue_log.is_some() {
        options = options.on_error(move |issue: WorkerIssue| {
            if print {
                println!("issue {issue}");
            }
            if let Some(log) = &issue_log {
                // A lost issue line costs only a clue, never a verdict.
                let _ = log.append(&RecordLine::Issue(issue.to_string()));
            }
        });
    }
    let mut worker = Worker::new(cairnq_core::CairnQ::from_shared(store), options)?;
    match (args.mode, log) {
        (ChildMode::Hang, _) => worker.task("crash", hang)?,
        (ChildMode::Sleep, _) => worker.task("sleep", sleep)?,
        (ChildMode::Record, Some(log)) => {
            let header = RecordLine::Child { pid: std::process::id(), worker: worker.worker_id().to_string() };
            log.append(&header).map_err(|e| Error::storage("cannot write the run log", e))?;
            worker.task("record", move |ctx: TaskContext, payload: Value| record(ctx, payload, log.clone()))?
        }
        (ChildMode::Record, None) => {
            return Err(Error::validation("log", "--mode record needs --log"));
        }
    };
    worker.run_until_signal().await
}

async fn hang(ctx: TaskContext, _payload: Value) -> std::result::Result<Value, TaskError> {
    println!("started {}", ctx.task_id());
    std::future::pending::<()>().await;
    Ok(Value::Null)
}

async fn sleep(_ctx: TaskContext, payload: Value) -> std::result::Result<Value, TaskError> {
    let ms = payload["ms"].as_u64().unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(json!({ "slept": ms }))
}

async fn record(ctx: TaskContext, payload: Value, log: Arc<RunLog>) -> std::result::Result<Value, TaskError> {
    let (task, attempt, worker) = (ctx.task_id().to_string(), ctx.attempt(), ctx.worker_id().to_string());
    let not_logged = |e: std::io::Error| TaskError::new(format!("cannot write the run log: {e}"));
    let at_ms = cairnq_core::Clock::now_ms(&cairnq_core::SystemClock);
    log.append(&RecordLine::Start { task: task.clone(), attempt, worker: worker.clone(), at_ms })
        .map_err(not_logged)?;
    tokio::time::sleep(Duration::from_millis(payload["ms"].as_u64().unwrap_or(0))).await;
    log.append(&RecordLine::End { task, attempt, worker: worker.clone() }).map_err(not_logged)?;
    Ok(json!({ "worker": worker, "pid": std::process::id(), "attempt": attempt }))
}

/// One line of a [`ChildMode::Record`] run log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordLine {
    /// `child <pid> <worker id>`: the process writing this log (first line).
    Child {
        /// Its process id.
        pid: u32,
        /// Its worker id.
        worker: String,
    },
    /// `start <task id> <attempt> <worker id> <epoch ms>`: a handler run
    /// began.
    Start {
        /// The task.
        task: String,
        /// The attempt the claim gave this run.
        attempt: i64,
        /// The worker running it.
        worker: String,
        /// When, by the host's clock.
        at_ms: i64,
    },
    /// `end <task id> <attempt> <worker id>`: the run's handler is returning
    /// its result (the worker has not settled it yet).
    End {
        /// The task.
        task: String,
        /// The attempt.
        attempt: i64,
        /// The worker.
        worker: String,
    },
    /// `issue <text>`: a [`WorkerIssue`], on one line.
    Issue(String),
}

impl RecordLine {
    /// Parses one line as [`Display`](std::fmt::Display) wrote it.
    pub fn parse(line: &str) -> std::result::Result<Self, String> {
        let bad = || format!("bad run log line {line:?}");
        if let Some(text) = line.strip_prefix("issue ") {
            return Ok(Self::Issue(text.to_string()));
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let int = |text: &str| text.parse::<i64>().map_err(|_| bad());
        match fields[..] {
            ["child", pid, worker] => Ok(Self::Child { pid: pid.parse().map_err(|_| bad())?, worker: worker.into() }),
            ["start", task, n, worker, at] => {
                Ok(Self::Start { task: task.into(), attempt: int(n)?, worker: worker.into(), at_ms: int(at)? })
            }
            ["end", task, n, worker] => Ok(Self::End { task: task.into(), attempt: int(n)?, worker: worker.into() }),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for RecordLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Child { pid, worker } => write!(f, "child {pid} {worker}"),
            Self::Start { task, attempt, worker, at_ms } => write!(f, "start {task} {attempt} {worker} {at_ms}"),
            Self::End { task, attempt, worker } => write!(f, "end {task} {attempt} {worker}"),
            Self::Issue(text) => write!(f, "issue {}", text.replace('\n', " ")),
        }
    }
}

/// The record mode's log: an unbuffered file opened for appending, one
/// `write` per line, so concurrent handlers never interleave within a line
/// and a line written is a line kept, whenever the process is killed.
struct RunLog(Mutex<File>);

impl RunLog {
    fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self(Mutex::new(File::options().create(true).append(true).open(path)?)))
    }

    fn append(&self, line: &RecordLine) -> std::io::Result<()> {
        let mut file = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(format!("{line}\n").as_bytes())
    }
}

/// Starts the child worker process with stdout piped.
pub fn spawn_child(args: &ChildArgs) -> std::io::Result<std::process::Child> {
    let binary = child_binary().map_err(std::io::Error::other)?;
    Command::new(binary).args(args.to_args()).stdout(Stdio::piped()).stdin(Stdio::null()).spawn()
}

/// Sends SIGTERM to a child (through `kill`, so no libc binding is needed).
pub fn terminate(child: &std::process::Child) -> std::io::Result<()> {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("kill -TERM failed: {status}"))) }
}

/// The `cairnq-test-worker` binary: `$CAIRNQ_TEST_WORKER_BIN` when set,
/// else built once per test process with the cargo that runs the tests
/// (dependencies' binaries are not built for another crate's tests), with
/// the backends this testkit was built with.
pub fn child_binary() -> std::result::Result<PathBuf, String> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    if let Some(path) = std::env::var_os("CAIRNQ_TEST_WORKER_BIN") {
        return Ok(PathBuf::from(path));
    }
    BUILT.get_or_init(build_child_binary).clone()
}

fn build_child_binary() -> std::result::Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    // One binary for every backend of this build: SQLite comes with the
    // default features, Postgres when this testkit has it.
    let features = if cfg!(feature = "postgres") { "postgres" } else { "" };
    let output = Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path", manifest, "--bin", "cairnq-test-worker"])
        .args(["--features", features, "--message-format", "json"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo to build cairnq-test-worker: {e}"))?;
    if !output.status.success() {
        return Err(format!("building cairnq-test-worker failed: {}", output.status));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["target"]["name"] == "cairnq-test-worker")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo built no cairnq-test-worker executable".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_round_trips() {
        let locator = StoreLocator::Postgres { dsn: "postgres://x@h/db".into(), schema: "s".into() };
        let mut args = ChildArgs::new(locator, ChildMode::Hang);
        (args.lease_ms, args.drain_ms, args.concurrency, args.poll_ms) = (7, 8, 9, 5_000);
        (args.listen, args.report_issues, args.log) = (false, true, Some("runs.log".into()));
        assert_eq!(ChildArgs::parse(&args.to_args()), Ok(args.clone()));
        args.mode = ChildMode::Record;
        assert_eq!(ChildArgs::parse(&args.to_args()), Ok(args.clone()));
        args.log = None;
        assert!(ChildArgs::parse(&args.to_args()).is_err(), "record mode needs a log");
        let defaults = ChildArgs::new(StoreLocator::Sqlite { path: "q.db".into() }, ChildMode::Sleep);
        assert_eq!(ChildArgs::parse(&defaults.to_args()), Ok(defaults));
        assert!(ChildArgs::parse(&["--poll-ms".into(), "soon".into()]).is_err());
    }

    #[test]
    fn run_log_lines_round_trip() {
        let lines = [
            RecordLine::Child { pid: 42, worker: "worker_A".into() },
            RecordLine::Start { task: "task_B".into(), attempt: 3, worker: "worker_A".into(), at_ms: 1_700 },
            RecordLine::End { task: "task_B".into(), attempt: 3, worker: "worker_A".into() },
            RecordLine::Issue("heartbeat failed: x y".into()),
        ];
        for line in lines {
            assert_eq!(RecordLine::parse(&line.to_string()), Ok(line));
        }
        assert!(RecordLine::parse("start task_B three worker_A 1700").is_err());
        assert!(RecordLine::parse("end task_B 3").is_err());
    }
}
