//! End-to-end benchmark workloads, run by `cargo xtask bench` through the
//! `cairnq-bench` binary, one workload per process (so RSS and CPU readings
//! belong to that workload alone).
//!
//! Each workload opens fresh stores through a [`BenchBackend`], drives the
//! public API (`CairnQ`, `Worker`) exactly as an application would, verifies
//! its outcome from the store, and returns [`Measurement`]s. Nothing here
//! asserts speed: the numbers go to BENCHMARKS.md, not to a test verdict.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams};
use cairnq_core::{CairnQ, Error, ListFilter, Result, Store, SubmitOptions, TaskSpec, TaskStatus, WaitOptions};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde::Serialize;
use serde_json::{Value, json};

/// One number a workload produced.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// The workload's name, e.g. `burn_down_c64`.
    pub workload: String,
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// What was measured, e.g. `tasks_per_s`, `p50_ms`.
    pub metric: String,
    /// The value.
    pub value: f64,
    /// Settings and sizes behind the number.
    pub detail: String,
}

/// Workload sizes: `full()` is the sizes, `quick()` the smallest
/// that still exercises every code path (CI runs it).
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    sequential: usize,
    producers: usize,
    per_producer: usize,
    bulk: usize,
    burn: usize,
    calls: usize,
    backlog_small: usize,
    backlog_large: usize,
    backing_off: usize,
    idle: Duration,
    rss_tasks: usize,
}

impl Sizes {
    /// The sizes of the benchmark issue.
    pub fn full() -> Self {
        Self {
            sequential: 5_000,
            producers: 64,
            per_producer: 500,
            bulk: 10_000,
            burn: 20_000,
            calls: 200,
            backlog_small: 1_000,
            backlog_large: 100_000,
            backing_off: 20_000,
            idle: Duration::from_secs(10),
            rss_tasks: 10_000,
        }
    }

    /// The smallest sizes.
    pub fn quick() -> Self {
        Self {
            sequential: 100,
            producers: 8,
            per_producer: 10,
            bulk: 200,
            burn: 200,
            calls: 10,
            backlog_small: 100,
            backlog_large: 1_000,
            backing_off: 200,
            idle: Duration::from_secs(1),
            rss_tasks: 100,
        }
    }
}

/// Where fresh benchmark stores come from.
#[derive(Debug, Clone)]
pub enum BenchBackend {
    /// New SQLite files in this directory (default durability: WAL +
    /// synchronous FULL, what every cairnq SDK uses).
    Sqlite {
        /// The directory.
        dir: PathBuf,
    },
    /// Fresh schemas in this Postgres database.
    #[cfg(feature = "postgres")]
    Postgres {
        /// Connection string.
        dsn: String,
    },
}

impl BenchBackend {
    /// `sqlite` or `postgres`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sqlite { .. } => "sqlite",
            #[cfg(feature = "postgres")]
            Self::Postgres { .. } => "postgres",
        }
    }

    /// A fresh, empty database: its locator string (a path or `dsn#schema`)
    /// and a store over it.
    pub async fn fresh(&self, label: &str) -> Result<(String, Arc<dyn Store>)> {
        let locator = match self {
            Self::Sqlite { dir } => {
                dir.join(format!("{label}-{}.db", cairnq_core::backend::new_task_id())).display().to_string()
            }
            #[cfg(feature = "postgres")]
            Self::Postgres { dsn } => format!("{dsn}#bench_{}", cairnq_core::backend::new_task_id().to_lowercase()),
        };
        let store = self.open(&locator).await?;
        Ok((locator, store))
    }

    /// Opens an existing database by locator (another process's too).
    pub async fn open(&self, locator: &str) -> Result<Arc<dyn Store>> {
        match self {
            Self::Sqlite { .. } => Ok(Arc::new(cairnq_sqlite::SqliteStore::open(locator).await?)),
            #[cfg(feature = "postgres")]
            Self::Postgres { .. } => {
                let (dsn, schema) = locator.split_once('#').unwrap_or((locator, "public"));
                let options = cairnq_postgres::PostgresOptions::new().schema(schema);
                Ok(Arc::new(cairnq_postgres::PostgresStore::connect_with(dsn, options).await?))
            }
        }
    }
}

/// The workload names, in the order `cargo xtask bench` runs them.
pub const WORKLOADS: &[&str] = &[
    "raw_commit",
    "sequential_submit",
    "concurrent_producers",
    "submit_many",
    "burn_down_c8",
    "burn_down_c64",
    "call_in_process",
    "call_two_processes",
    "wakeup_latency",
    "claim_backlog",
    "idle_worker_cpu",
    "worker_rss",
];

/// Runs one workload. `exe` is the bench binary itself (workloads that need
/// a second process spawn it).
pub async fn run_workload(name: &str, backend: &BenchBackend, sizes: Sizes, exe: &Path) -> Result<Vec<Measurement>> {
    let m = |workload: &str, metric: &str, value: f64, detail: String| Measurement {
        workload: workload.to_string(),
        backend: backend.name().to_string(),
        metric: metric.to_string(),
        value,
        detail,
    };
    Ok(match name {
        "raw_commit" => match backend {
            BenchBackend::Sqlite { dir } => {
                let rate = raw_commit_rate(dir, sizes.sequential)?;
                vec![m(
                    name,
                    "rows_per_s",
                    rate,
                    format!("{} rows, one commit each, synchronous=FULL", sizes.sequential),
                )]
            }
            #[cfg(feature = "postgres")]
            BenchBackend::Postgres { .. } => Vec::new(),
        },
        "sequential_submit" => {
            let rate = sequential_submit(backend, sizes.sequential).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} submits, one at a time", sizes.sequential))]
        }
        "concurrent_producers" => {
            let rate = concurrent_producers(backend, sizes.producers, sizes.per_producer).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} producers x {}", sizes.producers, sizes.per_producer))]
        }
        "submit_many" => {
            let rate = bulk_submit(backend, sizes.bulk).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} tasks in one call", sizes.bulk))]
        }
        "burn_down_c8" | "burn_down_c64" => {
            let concurrency = if name == "burn_down_c8" { 8 } else { 64 };
            let rate = burn_down(backend, sizes.burn, concurrency).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} no-op tasks, concurrency {concurrency}", sizes.burn))]
        }
        "call_in_process" => {
            let (p50, p95) = call_in_process(backend, sizes.calls).await?;
            vec![
                m(name, "p50_ms", p50, format!("{} calls, worker in this process", sizes.calls)),
                m(name, "p95_ms", p95, format!("{} calls", sizes.calls)),
            ]
        }
        "call_two_processes" => {
            let (p50, p95) = call_two_processes(backend, sizes.calls, exe).await?;
            vec![
                m(name, "p50_ms", p50, format!("{} calls, worker in another process", sizes.calls)),
                m(name, "p95_ms", p95, format!("{} calls", sizes.calls)),
            ]
        }
        "wakeup_latency" => {
            let (p50, p95) = wakeup_latency(backend, sizes.calls.min(50)).await?;
            let detail = |n| format!("{n} submits to an idle worker polling every 5 s; submit to handler start");
            vec![
                m(name, "p50_ms", p50, detail(sizes.calls.min(50))),
                m(name, "p95_ms", p95, detail(sizes.calls.min(50))),
            ]
        }
        "claim_backlog" => {
            let small = claim_at_backlog(backend, sizes.backlog_small, sizes.backing_off).await?;
            let large = claim_at_backlog(backend, sizes.backlog_large, sizes.backing_off).await?;
            let detail = |n| format!("claim 1 of {n} queued + {} backing off, median of 200", sizes.backing_off);
            vec![
                m(name, "small_backlog_ms", small, detail(sizes.backlog_small)),
                m(name, "large_backlog_ms", large, detail(sizes.backlog_large)),
                m(name, "large_over_small", large / small.max(1e-9), "ratio".to_string()),
            ]
        }
        "idle_worker_cpu" => {
            let percent = idle_worker_cpu(backend, sizes.idle).await?;
            vec![m(name, "cpu_percent", percent, format!("{:?} idle at the default poll (500 ms)", sizes.idle))]
        }
        "worker_rss" => {
            let mb = worker_rss(backend, sizes.rss_tasks, exe).await?;
            vec![m(name, "peak_rss_mb", mb, format!("{} tasks of 10 KB drained at concurrency 8", sizes.rss_tasks))]
        }
        other => return Err(Error::validation("workload", format!("unknown workload {other:?}"))),
    })
}

fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// SQLite's own floor: one INSERT per transaction into the cairnq schema,
/// WAL + synchronous FULL, straight through rusqlite.
fn raw_commit_rate(dir: &Path, rows: usize) -> Result<f64> {
    let storage = |e: rusqlite::Error| Error::storage("raw commit benchmark", e);
    let conn = rusqlite::Connection::open(dir.join(format!("raw-{}.db", cairnq_core::backend::new_task_id())))
        .map_err(storage)?;
    conn.pragma_update(None, "journal_mode", "WAL").map_err(storage)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(storage)?;
    for migration in cairnq_protocol::sqlite::MIGRATIONS {
        conn.execute_batch(migration.sql).map_err(storage)?;
    }
    let sql = "insert into cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms) \
               values (?1, 'noop', 'default', 'queued', '{}', 0, 0, 0)";
    let start = Instant::now();
    for _ in 0..rows {
        conn.execute(sql, [cairnq_core::backend::new_task_id()]).map_err(storage)?;
    }
    Ok(per_second(rows, start.elapsed()))
}

async fn sequential_submit(backend: &BenchBackend, count: usize) -> Result<f64> {
    let (_, store) = backend.fresh("sequential").await?;
    let client = CairnQ::from_shared(store);
    let start = Instant::now();
    for i in 0..count {
        client.submit("noop", &json!({ "i": i })).await?;
    }
    let rate = per_second(count, start.elapsed());
    expect_count(&client, TaskStatus::Queued, count).await?;
    Ok(rate)
}

async fn concurrent_producers(backend: &BenchBackend, producers: usize, each: usize) -> Result<f64> {
    let (_, store) = backend.fresh("producers").await?;
    let client = CairnQ::from_shared(store);
    let start = Instant::now();
    let mut joins = Vec::new();
    for p in 0..producers {
        let client = client.clone();
        joins.push(tokio::spawn(async move {
            for i in 0..each {
                client.submit("noop", &json!({ "p": p, "i": i })).await?;
            }
            Ok::<_, Error>(())
        }));
    }
    for join in joins {
        join.await.map_err(|e| Error::storage("producer task panicked", e))??;
    }
    let rate = per_second(producers * each, start.elapsed());
    expect_count(&client, TaskStatus::Queued, producers * each).await?;
    Ok(rate)
}

fn noop_specs(count: usize, payload: &Value) -> Vec<TaskSpec> {
    (0..count).map(|_| TaskSpec::new("noop", payload)).collect()
}

async fn bulk_submit(backend: &BenchBackend, count: usize) -> Result<f64> {
    let (_, store) = backend.fresh("bulk").await?;
    let client = CairnQ::from_shared(store);
    let specs = noop_specs(count, &json!({ "bulk": true }));
    let start = Instant::now();
    client.submit_many(&specs).await?;
    let rate = per_second(count, start.elapsed());
    expect_count(&client, TaskStatus::Queued, count).await?;
    Ok(rate)
}

/// A worker whose `noop` handler only counts its calls: the count tells the
/// harness when to look at the store, so the harness does not compete with
/// the worker for the store while it drains (a stats() poll every few
/// milliseconds costs more than the work it watches).
fn noop_worker(store: Arc<dyn Store>, concurrency: usize, calls: Arc<AtomicUsize>) -> Result<Worker> {
    let mut worker = Worker::new(CairnQ::from_shared(store), WorkerOptions::new().concurrency(concurrency))?;
    worker.task("noop", move |_ctx: TaskContext, _payload: Value| {
        calls.fetch_add(1, Ordering::Relaxed);
        async move { Ok::<_, TaskError>(Value::Null) }
    })?;
    Ok(worker)
}

/// Waits until the handler ran `count` times, then until the store shows
/// every task succeeded (the settle writes trail the handler calls).
async fn wait_for_drain(client: &CairnQ, calls: &AtomicUsize, count: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while calls.load(Ordering::Relaxed) < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    wait_for_count(client, TaskStatus::Succeeded, count, Duration::from_secs(60)).await
}

async fn burn_down(backend: &BenchBackend, count: usize, concurrency: usize) -> Result<f64> {
    let (_, store) = backend.fresh("burn").await?;
    let client = CairnQ::from_shared(store.clone());
    client.submit_many(&noop_specs(count, &json!({}))).await?;
    let calls = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handle = noop_worker(store, concurrency, calls.clone())?.spawn();
    wait_for_drain(&client, &calls, count).await?;
    let rate = per_second(count, start.elapsed());
    handle.stop_and_join().await?;
    Ok(rate)
}

async fn timed_calls(client: &CairnQ, calls: usize) -> Result<(f64, f64)> {
    let wait = WaitOptions::new().timeout(Duration::from_secs(30));
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls {
        let start = Instant::now();
        client.call("noop", &json!({ "i": i }), &SubmitOptions::new(), &wait).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(percentiles(samples))
}

async fn call_in_process(backend: &BenchBackend, calls: usize) -> Result<(f64, f64)> {
    let (_, store) = backend.fresh("call").await?;
    let handle = noop_worker(store.clone(), 1, Arc::default())?.spawn();
    let latency = timed_calls(&CairnQ::from_shared(store), calls).await;
    handle.stop_and_join().await?;
    latency
}

async fn call_two_processes(backend: &BenchBackend, calls: usize, exe: &Path) -> Result<(f64, f64)> {
    let (locator, store) = backend.fresh("call2").await?;
    let mut child = spawn_child(exe, backend, "serve-noop", &locator, 0)?;
    let client = CairnQ::from_shared(store);
    // Warm-up: the first call also waits for the child to start serving.
    client
        .call("noop", &json!({}), &SubmitOptions::new(), &WaitOptions::new().timeout(Duration::from_secs(60)))
        .await?;
    let latency = timed_calls(&client, calls).await;
    let _ = child.kill();
    let _ = child.wait();
    latency
}

/// Submit-to-start latency of an idle worker whose poll is 5 s: what push
/// wakeups buy (without them it would average half the poll).
async fn wakeup_latency(backend: &BenchBackend, submits: usize) -> Result<(f64, f64)> {
    let (_, store) = backend.fresh("wakeup").await?;
    let client = CairnQ::from_shared(store.clone());
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let options = WorkerOptions::new().poll_interval(Duration::from_secs(5));
    let mut worker = Worker::new(CairnQ::from_shared(store), options)?;
    worker.task("noop", move |_ctx: TaskContext, _payload: Value| {
        let _ = started_tx.send(Instant::now());
        async move { Ok::<_, TaskError>(Value::Null) }
    })?;
    let handle = worker.spawn();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut samples = Vec::with_capacity(submits);
    for i in 0..submits {
        let submitted = Instant::now();
        client.submit("noop", &json!({ "i": i })).await?;
        let started = tokio::time::timeout(Duration::from_secs(30), started_rx.recv())
            .await
            .ok()
            .flatten()
            .ok_or_else(|| Error::validation("wakeup_latency", "the worker did not start the task"))?;
        samples.push(started.duration_since(submitted).as_secs_f64() * 1000.0);
        // Let the worker go idle again before the next submit.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    handle.stop_and_join().await?;
    Ok(percentiles(samples))
}

fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (pick(0.5), pick(0.95))
}

async fn claim_at_backlog(backend: &BenchBackend, queued: usize, backing_off: usize) -> Result<f64> {
    let (_, store) = backend.fresh("backlog").await?;
    let client = CairnQ::from_shared(store);
    for chunk in noop_specs(queued, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let later = SubmitOptions::new().delay_ms(3_600_000);
    let delayed: Vec<TaskSpec> =
        noop_specs(backing_off, &json!({})).into_iter().map(|s| s.options(later.clone())).collect();
    for chunk in delayed.chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let params = ClaimParams::new("bench", 30_000)
        .draw(ClaimDraw::new(vec!["default".into()]).names(vec!["noop".into()]).limit(1));
    let mut samples = Vec::new();
    for _ in 0..200.min(queued) {
        let start = Instant::now();
        let claimed = client.claim(&params).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
        if claimed.len() != 1 {
            return Err(Error::validation("claim_backlog", "a claim found nothing in a non-empty backlog"));
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

async fn idle_worker_cpu(backend: &BenchBackend, idle: Duration) -> Result<f64> {
    let (_, store) = backend.fresh("idle").await?;
    let handle = noop_worker(store, 8, Arc::default())?.spawn();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (cpu_before, wall_before) = (process_cpu_seconds(), Instant::now());
    tokio::time::sleep(idle).await;
    let percent = 100.0 * (process_cpu_seconds() - cpu_before) / wall_before.elapsed().as_secs_f64();
    handle.stop_and_join().await?;
    Ok(percent)
}

async fn worker_rss(backend: &BenchBackend, count: usize, exe: &Path) -> Result<f64> {
    let (locator, store) = backend.fresh("rss").await?;
    let client = CairnQ::from_shared(store);
    let payload = json!({ "blob": "x".repeat(10 * 1024) });
    for chunk in noop_specs(count, &payload).chunks(1_000) {
        client.submit_many(chunk).await?;
    }
    let output = spawn_child(exe, backend, "drain-report-rss", &locator, count)?
        .wait_with_output()
        .map_err(|e| Error::storage("the draining child failed", e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let kb: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_kb "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::validation("worker_rss", format!("the child reported no RSS: {text}")))?;
    expect_count(&client, TaskStatus::Succeeded, count).await?;
    Ok(kb / 1024.0)
}

/// The child-process roles of the bench binary (`--role`).
pub async fn run_child_role(role: &str, backend: &BenchBackend, locator: &str, count: usize) -> Result<()> {
    let store = backend.open(locator).await?;
    match role {
        "serve-noop" => noop_worker(store, 8, Arc::default())?.run().await,
        "drain-report-rss" => {
            let client = CairnQ::from_shared(store.clone());
            let calls = Arc::new(AtomicUsize::new(0));
            let handle = noop_worker(store, 8, calls.clone())?.spawn();
            wait_for_drain(&client, &calls, count).await?;
            handle.stop_and_join().await?;
            println!("peak_rss_kb {}", peak_rss_kb());
            Ok(())
        }
        other => Err(Error::validation("role", format!("unknown role {other:?}"))),
    }
}

fn spawn_child(
    exe: &Path,
    backend: &BenchBackend,
    role: &str,
    locator: &str,
    count: usize,
) -> Result<std::process::Child> {
    let mut command = std::process::Command::new(exe);
    command.args(["--backend", backend.name(), "--role", role, "--locator", locator, "--count", &count.to_string()]);
    #[cfg(feature = "postgres")]
    if let BenchBackend::Postgres { dsn } = backend {
        command.args(["--dsn", dsn]);
    }
    command.stdout(std::process::Stdio::piped());
    command.spawn().map_err(|e| Error::storage("cannot start a bench child process", e))
}

async fn expect_count(client: &CairnQ, status: TaskStatus, expected: usize) -> Result<()> {
    let stats = client.stats(Some("default")).await?;
    let actual = stats.get("default").map(|c| c.get(status)).unwrap_or(0);
    if actual as usize == expected {
        Ok(())
    } else {
        Err(Error::validation("benchmark", format!("expected {expected} {status} tasks, the store holds {actual}")))
    }
}

async fn wait_for_count(client: &CairnQ, status: TaskStatus, expected: usize, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        if expect_count(client, status, expected).await.is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            let sample = client.list(&ListFilter::new().page(3, 0)).await?;
            return Err(Error::validation("benchmark", format!("not drained in {limit:?}; newest rows: {sample:?}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// CPU seconds of this process: its threads' scheduler time, else the
/// user + system ticks of /proc/self/stat.
fn process_cpu_seconds() -> f64 {
    threads_cpu_seconds().unwrap_or_else(ticked_cpu_seconds)
}

/// The scheduler's own count (nanoseconds on a CPU) summed over this
/// process's live threads: exact, where utime/stime are sampled in 10 ms
/// ticks, too coarse for an idle worker's few milliseconds a second.
fn threads_cpu_seconds() -> Option<f64> {
    let mut total_ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let schedstat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total_ns += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total_ns as f64 / 1e9)
}

/// User + system CPU seconds from /proc/self/stat (10 ms ticks).
fn ticked_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
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
