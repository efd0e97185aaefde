//! The processes the multi-process and soak workloads start: the bench
//! binary run again as a producer or a worker on the store a locator names
//! (`cairnq-bench --role ROLE (--sqlite PATH | --postgres DSN SCHEMA) [--secs N]
//! [--rate N]`). Each prints one JSON line of what it did as it ends, so the
//! parent adds them up.
//!
//! - `producer`: eight lanes submit `noop` tasks (or, with `--rate`, one
//!   lane at that many per second) for `--secs`; prints submits and latency.
//! - `worker`: a `noop` worker of concurrency 8 until its stdin closes;
//!   prints how many handler calls it made, and how it claimed them
//!   (`claims`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Error, Result, Store};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

use super::claims;
use cairnq_testkit::StoreLocator;
use cairnq_testkit::child::open_store;

/// The bench binary's first argument that makes it a role process.
pub const ROLE_FLAG: &str = "--role";

/// Lanes of one producer process.
const LANES: usize = 8;

/// A role process's arguments.
struct RoleArgs {
    role: String,
    locator: StoreLocator,
    secs: f64,
    rate: Option<f64>,
}

fn parse(args: &[String]) -> Result<RoleArgs> {
    let bad = |what: &str| Error::validation("role arguments", what.to_string());
    let mut it = args.iter();
    let role = it.next().ok_or_else(|| bad("a role"))?.clone();
    let (mut locator, mut secs, mut rate) = (None, 10.0, None);
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| bad(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--sqlite" => locator = Some(StoreLocator::Sqlite { path: PathBuf::from(value()?) }),
            "--postgres" => locator = Some(StoreLocator::Postgres { dsn: value()?, schema: value()? }),
            "--secs" => secs = value()?.parse().map_err(|_| bad("--secs takes seconds"))?,
            "--rate" => rate = Some(value()?.parse().map_err(|_| bad("--rate takes tasks per second"))?),
            other => return Err(bad(&format!("unknown argument {other}"))),
        }
    }
    Ok(RoleArgs { role, locator: locator.ok_or_else(|| bad("--sqlite or --postgres"))?, secs, rate })
}

/// Runs the role `args` name (after [`ROLE_FLAG`]); prints its JSON line.
pub async fn run_role(args: &[String]) -> Result<()> {
    let args = parse(args)?;
    // On SQLite the worker reports the writer's lock waits, which only the
    // store as its own type has.
    let sqlite = match &args.locator {
        StoreLocator::Sqlite { path } => Some(Arc::new(cairnq_sqlite::SqliteStore::open(path).await?)),
        _ => None,
    };
    let store: Arc<dyn Store> = match &sqlite {
        Some(sqlite) => sqlite.clone(),
        None => open_store(&args.locator).await?,
    };
    let report = match args.role.as_str() {
        "producer" => {
            produce(&CairnQ::from_shared(store.clone()), Duration::from_secs_f64(args.secs), args.rate).await?
        }
        "worker" => work(store.clone(), sqlite.as_deref()).await?,
        other => return Err(Error::validation("role", format!("unknown role {other:?}"))),
    };
    println!("{report}");
    store.close().await
}

async fn produce(client: &CairnQ, secs: Duration, rate: Option<f64>) -> Result<Value> {
    let deadline = Instant::now() + secs;
    let lanes = if rate.is_some() { 1 } else { LANES };
    let every = rate.map(|r| Duration::from_secs_f64(1.0 / r.max(1e-3)));
    let mut joins = Vec::new();
    for lane in 0..lanes {
        let client = client.clone();
        joins.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut next = Instant::now();
            while Instant::now() < deadline {
                let start = Instant::now();
                let at = super::epoch_ms();
                client.submit("noop", &json!({ "lane": lane, "at_ms": at })).await?;
                latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                if let Some(every) = every {
                    next += every;
                    tokio::time::sleep_until(next.into()).await;
                }
            }
            Ok::<_, Error>(latencies)
        }));
    }
    let mut all = Vec::new();
    for join in joins {
        all.extend(join.await.map_err(|e| Error::storage("a producer lane panicked", e))??);
    }
    let (p50, p99, max) = spread(&mut all);
    Ok(json!({ "submitted": all.len(), "p50_ms": p50, "p99_ms": p99, "max_ms": max }))
}

/// Median, 99th percentile and maximum of `samples` (zeros when empty).
pub(super) fn spread(samples: &mut [f64]) -> (f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    samples.sort_by(f64::total_cmp);
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (pick(0.5), pick(0.99), samples[samples.len() - 1])
}

async fn work(store: Arc<dyn Store>, sqlite: Option<&cairnq_sqlite::SqliteStore>) -> Result<Value> {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let (counted, claims) = claims::counted(store.clone());
    let mut worker = Worker::new(CairnQ::from_shared(counted), WorkerOptions::new().concurrency(8))?;
    worker.task("noop", move |_ctx: TaskContext, _payload: Value| {
        counter.fetch_add(1, Ordering::Relaxed);
        async move { Ok::<_, TaskError>(Value::Null) }
    })?;
    let handle = worker.spawn();
    println!("ready");
    // Until the parent closes stdin.
    tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink()))
        .await
        .map_err(|e| Error::storage("the stdin reader", e))?
        .map_err(|e| Error::storage("stdin", e))?;
    handle.stop_and_join().await?;
    let mut report = claims.report(sqlite);
    report["ran"] = json!(calls.load(Ordering::Relaxed));
    Ok(report)
}

/// A role process the parent started; dropping it kills it.
pub(super) struct RoleProcess {
    child: Option<Child>,
    stdout: Option<BufReader<ChildStdout>>,
}

impl RoleProcess {
    /// Starts `exe` as `role` on `locator` with `extra` arguments.
    pub(super) fn spawn(exe: &std::path::Path, role: &str, locator: &StoreLocator, extra: &[String]) -> Result<Self> {
        let mut command = Command::new(exe);
        command.args([ROLE_FLAG, role]);
        match locator {
            StoreLocator::Sqlite { path } => command.arg("--sqlite").arg(path),
            StoreLocator::Postgres { dsn, schema } => command.args(["--postgres", dsn, schema]),
            other => return Err(Error::validation("locator", format!("no bench role process can open {other:?}"))),
        };
        let mut child = command
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::storage("cannot start a bench role process", e))?;
        let stdout = child.stdout.take().map(BufReader::new);
        Ok(Self { child: Some(child), stdout })
    }

    /// The process id (0 once finished).
    pub(super) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The next line the process prints (`None` once its stdout closed).
    async fn line(&mut self) -> Result<Option<String>> {
        let mut stdout = self.stdout.take().ok_or_else(|| Error::validation("role process", "no stdout"))?;
        let (stdout, line) = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            let read = stdout.read_line(&mut line);
            (stdout, read.map(|n| (n > 0).then_some(line)))
        })
        .await
        .map_err(|e| Error::storage("reading a role process", e))?;
        self.stdout = Some(stdout);
        line.map_err(|e| Error::storage("reading a role process", e))
    }

    /// Waits until a worker says it is serving.
    pub(super) async fn ready(&mut self) -> Result<()> {
        while let Some(line) = self.line().await? {
            if line.trim() == "ready" {
                return Ok(());
            }
        }
        Err(Error::validation("role process", "ended before it was ready"))
    }

    /// Closes stdin (a worker's cue to stop), waits, and returns the JSON
    /// line it printed last.
    pub(super) async fn finish(mut self) -> Result<Value> {
        let mut child = self.child.take().ok_or_else(|| Error::validation("role process", "already finished"))?;
        drop(child.stdin.take());
        let mut last = String::from("null");
        while let Some(line) = self.line().await? {
            if !line.trim().is_empty() {
                last = line.trim().to_string();
            }
        }
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .map_err(|e| Error::storage("waiting for a role process", e))?
            .map_err(|e| Error::storage("waiting for a role process", e))?;
        if !status.success() {
            return Err(Error::validation("role process", format!("failed ({status}): {last}")));
        }
        serde_json::from_str(&last).map_err(|e| Error::validation("role process", format!("printed {last:?}: {e}")))
    }
}

impl Drop for RoleProcess {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child
            && let Ok(None) = child.try_wait()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
