//! The child's side of the protocol: what the process does in each mode
//! and the stdout lines it says it with.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::store::ClaimParams;
use cairnq_core::{CairnQ, Error, Result, Schedule, Store, Task, TaskStatus};
use cairnq_worker::{OnUnusable, TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use serde_json::{Value, json};

use super::record::{RecordLine, RunLog};
use super::{ChildArgs, ChildMode};
use crate::StoreLocator;
use crate::forwarding::{Forward, Forwarding};
use crate::telemetry::SpanRecorder;

/// The whole child process: parses `args` (the command line after the
/// program name), runs the mode, prints the closing `exit` line and
/// returns the exit code (2 on a usage error).
pub fn main(args: &[String]) -> ExitCode {
    let args = match ChildArgs::parse(args) {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("cairnq child process: {usage}");
            return ExitCode::from(2);
        }
    };
    if args.report_spans {
        report_spans();
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            println!("exit err cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run_child(&args));
    // Do not wait for handlers abandoned at the drain timeout.
    runtime.shutdown_background();
    if args.report_rss {
        println!("peak_rss_kb {}", peak_rss_kb());
    }
    match result {
        Ok(()) => {
            println!("exit ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("exit err {}", one_line(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// Prints every `process` span as it closes, as `span <JSON>`.
fn report_spans() {
    let recorder = SpanRecorder::on_close(|span| {
        if span.name == "process" {
            println!("span {}", serde_json::to_string(span).unwrap_or_default());
        }
    });
    if tracing::subscriber::set_global_default(recorder).is_err() {
        println!("exit err a tracing subscriber was already set");
    }
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

/// Runs the mode `args` names (a worker until SIGINT/SIGTERM, or a client
/// role), printing its lines.
pub async fn run_child(args: &ChildArgs) -> Result<()> {
    if args.mode == ChildMode::Open {
        match open_store(&args.locator).await {
            Ok(store) => {
                println!("opened");
                store.close().await?;
            }
            Err(e) => println!("open_error {}", one_line(&e.to_string())),
        }
        return Ok(());
    }
    // A settle-in worker's handler needs the worker's store as its backend type.
    let settle_store = match args.mode {
        ChildMode::SettleIn => Some(super::settle_in::SettleStore::open(&args.locator).await?),
        _ => None,
    };
    let store = match &settle_store {
        Some(settle_store) => settle_store.shared.clone(),
        None if args.listen => open_store(&args.locator).await?,
        None => open_store_polling(&args.locator).await?,
    };
    match args.mode {
        ChildMode::SubmitBurst => submit_burst(CairnQ::from_shared(store)).await,
        ChildMode::SubmitOnGo => submit_on_go(CairnQ::from_shared(store)).await,
        _ => run_worker(args, store, settle_store).await,
    }
}

/// How often a child with `--schedule` fires due schedules.
const SCHEDULE_CHECK: Duration = Duration::from_millis(250);

/// `NAME=SPEC` as a schedule firing the handler of `mode`.
fn declared_schedule(mode: ChildMode, declared: &str) -> Result<Schedule> {
    let (name, spec) = declared.split_once('=').ok_or_else(|| Error::validation("schedule", "expected NAME=SPEC"))?;
    let task = match mode {
        ChildMode::Sleep => "sleep",
        ChildMode::Record => "record",
        _ => "noop",
    };
    Schedule::cron(name, spec, task)
}

async fn run_worker(
    args: &ChildArgs,
    store: Arc<dyn Store>,
    settle_store: Option<super::settle_in::SettleStore>,
) -> Result<()> {
    let log = match &args.log {
        Some(path) => Some(Arc::new(RunLog::open(path).map_err(|e| Error::storage("cannot open the run log", e))?)),
        None => None,
    };
    let mut options = WorkerOptions::new()
        .lease(Duration::from_millis(args.lease_ms))
        .drain_timeout(Duration::from_millis(args.drain_ms))
        .concurrency(args.concurrency)
        .poll_interval(Duration::from_millis(args.poll_ms));
    if args.keep_retrying {
        options = options.on_unusable(OnUnusable::KeepRetrying);
    }
    if let Some(declared) = &args.schedule {
        options = options.schedule(declared_schedule(args.mode, declared)?).schedules_every(Some(SCHEDULE_CHECK));
    }
    let (print, issue_log) = (args.report_issues, log.clone());
    if print || issue_log.is_some() {
        options = options.on_error(move |issue: WorkerIssue| {
            if print {
                println!("issue {}", one_line(&issue.to_string()));
            }
            if let Some(log) = &issue_log {
                // A lost issue line costs only a clue, never a verdict.
                let _ = log.append(&RecordLine::Issue(issue.to_string()));
            }
        });
    }
    let client = if args.report_claims {
        CairnQ::new(Forwarding(ReportClaims(store.clone())))
    } else {
        CairnQ::from_shared(store.clone())
    };
    let mut worker = Worker::new(client, options)?;
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let count = move || counted.fetch_add(1, Ordering::SeqCst);
    match (args.mode, log) {
        (ChildMode::Hang, _) => worker.task("crash", move |ctx: TaskContext, _: Value| {
            count();
            hang(ctx)
        })?,
        (ChildMode::Sleep, _) => worker.task("sleep", move |_ctx: TaskContext, payload: Value| {
            count();
            sleep(payload)
        })?,
        (ChildMode::Noop, _) => worker.task("noop", move |_ctx: TaskContext, _: Value| {
            count();
            async { Ok::<_, TaskError>(Value::Null) }
        })?,
        (ChildMode::Record, Some(log)) => {
            let header = RecordLine::Child { pid: std::process::id(), worker: worker.worker_id().to_string() };
            log.append(&header).map_err(|e| Error::storage("cannot write the run log", e))?;
            worker.task("record", move |ctx: TaskContext, payload: Value| {
                count();
                record(ctx, payload, log.clone())
            })?
        }
        (ChildMode::FanOut, Some(log)) => {
            let header = RecordLine::Child { pid: std::process::id(), worker: worker.worker_id().to_string() };
            log.append(&header).map_err(|e| Error::storage("cannot write the run log", e))?;
            super::fan_out::register(&mut worker, log, count)?;
            &mut worker
        }
        (ChildMode::SettleIn, _) => {
            let settle_store = settle_store.ok_or_else(|| Error::validation("mode", "settle-in needs its store"))?;
            let locator = args.locator.clone();
            worker.task("settle_in", move |ctx: TaskContext, payload: Value| {
                count();
                super::settle_in::settle_in(ctx, payload, settle_store.clone(), locator.clone())
            })?
        }
        (mode, _) => return Err(Error::validation("mode", format!("{mode:?} runs no worker (or needs --log)"))),
    };
    println!("ready {} {}", std::process::id(), worker.worker_id());
    match args.stop_after {
        None => worker.run_until_signal().await,
        Some(n) => {
            let handle = worker.spawn();
            let drained = drained(&CairnQ::from_shared(store), &calls, n).await;
            handle.stop_and_join().await?;
            drained
        }
    }
}

/// Waits until the handler ran `n` times, then until the store shows `n`
/// tasks succeeded (settle writes trail the calls). The call count tells
/// when to look, so the wait does not compete with the worker for the
/// store while it drains.
async fn drained(client: &CairnQ, calls: &AtomicU64, n: u64) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    while calls.load(Ordering::SeqCst) < n {
        if tokio::time::Instant::now() > deadline {
            return Err(Error::validation("stop_after", "the handler was not called often enough in time"));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    loop {
        let stats = client.stats(None).await?;
        if stats.values().map(|c| c.get(TaskStatus::Succeeded)).sum::<u64>() >= n {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::validation("stop_after", "the tasks were not settled in time"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Prints `claim` before every claim attempt.
struct ReportClaims(Arc<dyn Store>);

#[async_trait]
impl Forward for ReportClaims {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        println!("claim");
        self.0.claim(params).await
    }
}

async fn hang(ctx: TaskContext) -> std::result::Result<Value, TaskError> {
    println!("started {}", ctx.task_id());
    std::future::pending::<()>().await;
    Ok(Value::Null)
}

async fn sleep(payload: Value) -> std::result::Result<Value, TaskError> {
    let ms = payload["ms"].as_u64().unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(json!({ "slept": ms }))
}

async fn record(ctx: TaskContext, payload: Value, log: Arc<RunLog>) -> std::result::Result<Value, TaskError> {
    let (task, attempt, worker) = (ctx.task_id().to_string(), ctx.attempt(), ctx.worker_id().to_string());
    let not_logged = |e: std::io::Error| TaskError::retryable(format!("cannot write the run log: {e}"));
    let now = || cairnq_core::Clock::now_ms(&cairnq_core::SystemClock);
    log.append(&RecordLine::Start { task: task.clone(), attempt, worker: worker.clone(), at_ms: now() })
        .map_err(not_logged)?;
    tokio::time::sleep(Duration::from_millis(payload["ms"].as_u64().unwrap_or(0))).await;
    log.append(&RecordLine::End { task, attempt, worker: worker.clone(), at_ms: now() }).map_err(not_logged)?;
    Ok(json!({ "worker": worker, "pid": std::process::id(), "attempt": attempt }))
}

/// Eight submitters at once (so writes share group commits) until the
/// process is killed, each acknowledging a task as soon as its submit
/// returned.
async fn submit_burst(client: CairnQ) -> Result<()> {
    let lanes: Vec<_> = (0..8)
        .map(|lane| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..u64::MAX {
                    let task = client.submit("burst", &json!({ "lane": lane, "n": n })).await?;
                    println!("ack {}", task.id);
                }
                Ok::<_, Error>(())
            })
        })
        .collect();
    for lane in lanes {
        lane.await.map_err(|e| Error::storage("a submit lane panicked", e))??;
    }
    Ok(())
}

/// Says it is open, submits one task once a line arrives on stdin,
/// acknowledges it, and ends when stdin closes.
async fn submit_on_go(client: CairnQ) -> Result<()> {
    println!("opened");
    let read = |until_end: bool| {
        tokio::task::spawn_blocking(move || {
            let mut lines = std::io::stdin().lock().lines();
            if until_end { lines.count() } else { lines.next().map_or(0, |_| 1) }
        })
    };
    let go = read(false).await.map_err(|e| Error::storage("the stdin reader", e))?;
    if go == 0 {
        return Err(Error::validation("stdin", "closed before the go-ahead line"));
    }
    let task = client.submit("ping", &json!({})).await?;
    println!("ack {}", task.id);
    read(true).await.map_err(|e| Error::storage("the stdin reader", e))?;
    client.close().await
}

/// Peak resident set size (VmHWM) of this process in KiB.
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `text` on one line, as the line protocol needs.
fn one_line(text: &str) -> String {
    text.replace('\n', " ")
}
