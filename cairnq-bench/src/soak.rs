//! `soak`: steady load for a long time, to show nothing grows without
//! bound. In this one process: a producer at a fixed rate, a worker
//! draining, a retention sweeper purging succeeded history on a short
//! interval, and a second client that opens, reads stats and closes again
//! every few seconds (readers coming and going are what keep a SQLite WAL
//! from being checkpointed). Every sample interval it records this
//! process's RSS and open descriptors, the WAL and database file sizes,
//! the rows held, and the p99 submit-to-start latency of the tasks started
//! since the last sample, as `metric@seconds` points.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Error, Result, Retention};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

use super::epoch_ms;
use super::roles::spread;
use cairnq_testkit::child::open_store;
use cairnq_testkit::{BackendFactory, StoreLocator};

/// Soak settings.
#[derive(Debug, Clone, Copy)]
pub struct SoakSettings {
    /// How long the load runs.
    pub duration: Duration,
    /// How often a sample is taken.
    pub sample_every: Duration,
    /// Submits per second.
    pub rate: f64,
    /// Succeeded tasks older than this are purged...
    pub keep: Duration,
    /// ...by a sweep this often.
    pub sweep_every: Duration,
}

/// Runs the soak; returns `metric@seconds` points.
pub(super) async fn soak(factory: &dyn BackendFactory, settings: SoakSettings) -> Result<Vec<(String, f64)>> {
    let fresh = factory.fresh().await?;
    let locator = fresh.locator.clone().ok_or_else(|| Error::validation("soak", "needs a locator"))?;
    let store = fresh.store;
    let client = CairnQ::from_shared(store.clone());
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let worker = start_worker(&client, latencies.clone())?;
    let retention = Retention::new().succeeded(settings.keep).interval(settings.sweep_every);
    let sweeper = retention.sweeper(store.clone())?.spawn(|e| eprintln!("soak: sweep failed: {e}"));
    let producer = tokio::spawn(produce(client.clone(), settings.rate, settings.duration));
    let start = Instant::now();
    let mut points = Vec::new();
    let mut next = start + settings.sample_every;
    while start.elapsed() < settings.duration {
        churn_reader(&locator).await?;
        tokio::time::sleep_until(next.into()).await;
        next += settings.sample_every;
        let taken: Vec<f64> = std::mem::take(&mut *latencies.lock().map_err(|_| poisoned())?);
        let at = start.elapsed().as_secs().to_string();
        for (metric, value) in sample(&client, &locator, taken).await? {
            points.push((format!("{metric}@{at}"), value));
        }
    }
    producer.await.map_err(|e| Error::storage("the soak producer panicked", e))??;
    drop(sweeper);
    worker.stop_and_join().await?;
    client.close().await?;
    Ok(points)
}

fn poisoned() -> Error {
    Error::validation("soak", "a latency lock was poisoned")
}

fn start_worker(client: &CairnQ, latencies: Arc<Mutex<Vec<f64>>>) -> Result<cairnq_worker::WorkerHandle> {
    let mut worker = Worker::new(client.clone(), WorkerOptions::new().concurrency(8))?;
    worker.task("noop", move |_ctx: TaskContext, payload: Value| {
        if let (Some(at), Ok(mut all)) = (payload["at_ms"].as_i64(), latencies.lock()) {
            all.push((epoch_ms() - at) as f64);
        }
        async move { Ok::<_, TaskError>(Value::Null) }
    })?;
    Ok(worker.spawn())
}

async fn produce(client: CairnQ, rate: f64, duration: Duration) -> Result<()> {
    let every = Duration::from_secs_f64(1.0 / rate.max(1e-3));
    let start = Instant::now();
    let mut next = start;
    while start.elapsed() < duration {
        client.submit("noop", &json!({ "at_ms": epoch_ms() })).await?;
        next += every;
        tokio::time::sleep_until(next.into()).await;
    }
    Ok(())
}

/// A reader that comes and goes: opens its own store, reads, closes.
async fn churn_reader(locator: &StoreLocator) -> Result<()> {
    let reader = CairnQ::from_shared(open_store(locator).await?);
    reader.stats(None).await?;
    reader.close().await
}

async fn sample(client: &CairnQ, locator: &StoreLocator, mut started: Vec<f64>) -> Result<Vec<(&'static str, f64)>> {
    let (_, p99, _) = spread(&mut started);
    let rows: u64 = client.stats(None).await?.values().map(|c| c.queued + c.running + c.succeeded + c.failed).sum();
    let mut out = vec![
        ("rss_mb", proc_status_kb("VmRSS:") as f64 / 1024.0),
        ("open_fds", std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0) as f64),
        ("p99_submit_to_start_ms", p99),
        ("rows", rows as f64),
    ];
    if let StoreLocator::Sqlite { path } = locator {
        let size = |p: std::path::PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        out.push(("wal_mb", size(wal.into())));
        out.push(("db_mb", size(path.clone())));
    }
    Ok(out)
}

fn proc_status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
