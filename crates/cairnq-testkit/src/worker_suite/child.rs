//! The child worker process of the crash and graceful-stop tests: the
//! `cairnq-test-worker` binary's logic, and how a test finds and starts it.
//!
//! Killing a real process is the only honest way to test what a crash does
//! to leases, so the worker under test runs in its own process, opening the
//! same database from a [`StoreLocator`] given on its command line.
//!
//! ```text
//! cairnq-test-worker --sqlite PATH --mode hang|sleep [--lease-ms N] [--drain-ms N] [--concurrency N]
//!                    [--poll-ms N] [--no-listen] [--report-issues]
//! ```
//!
//! - `hang`: handler `crash` prints `started <task id>` and never returns.
//! - `sleep`: handler `sleep` sleeps `payload.ms` milliseconds and returns
//!   `{"slept": ms}`.
//!
//! With `--report-issues` every [`WorkerIssue`] prints as `issue <text>`. A
//! Postgres store opened with `--no-listen` has no LISTEN connection, so the
//! worker finds tasks by polling every `--poll-ms` only.
//!
//! The worker runs until SIGINT/SIGTERM, then drains and exits 0.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
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
}

impl ChildArgs {
    /// Defaults: lease 1 s, drain 1 s, concurrency 1, poll every 50 ms,
    /// push wakeups on, issues not printed.
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
        }
    }

    /// As command-line arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = match &self.locator {
            StoreLocator::Sqlite { path } => vec!["--sqlite".to_string(), path.display().to_string()],
            StoreLocator::Postgres { dsn, schema } => vec!["--postgres".into(), dsn.clone(), schema.clone()],
        };
        let mode = if self.mode == ChildMode::Hang { "hang" } else { "sleep" };
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
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        parsed.locator = locator.ok_or("--sqlite or --postgres is required")?;
        parsed.mode = mode.ok_or("--mode is required")?;
        Ok(parsed)
    }
}

fn parse_mode(mode: &str) -> std::result::Result<ChildMode, String> {
    match mode {
        "hang" => Ok(ChildMode::Hang),
        "sleep" => Ok(ChildMode::Sleep),
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
    let mut options = WorkerOptions::new()
        .lease(Duration::from_millis(args.lease_ms))
        .drain_timeout(Duration::from_millis(args.drain_ms))
        .concurrency(args.concurrency)
        .poll_interval(Duration::from_millis(args.poll_ms));
    if args.report_issues {
        options = options.on_error(|issue: WorkerIssue| println!("issue {issue}"));
    }
    let mut worker = Worker::new(cairnq_core::CairnQ::from_shared(store), options)?;
    match args.mode {
        ChildMode::Hang => worker.task("crash", hang)?,
        ChildMode::Sleep => worker.task("sleep", sleep)?,
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
        (args.listen, args.report_issues) = (false, true);
        assert_eq!(ChildArgs::parse(&args.to_args()), Ok(args.clone()));
        let defaults = ChildArgs::new(StoreLocator::Sqlite { path: "q.db".into() }, ChildMode::Sleep);
        assert_eq!(ChildArgs::parse(&defaults.to_args()), Ok(defaults));
        assert!(ChildArgs::parse(&["--poll-ms".into(), "soon".into()]).is_err());
    }
}
