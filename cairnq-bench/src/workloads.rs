//! The workloads: each takes a fresh store, does one kind of work the way
//! an application would, checks the outcome, and returns its numbers.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, Error, Limit, Result, Schedule, Store, SubmitOptions, Task, TaskSpec, TaskStatus, WaitOptions,
    WorkerSession,
};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

use super::process::{locator_of, peak_rss_of_drain, process_cpu_seconds, spawn_noop_worker};
use super::{expect_count, per_second, percentiles, wait_for_count};
use cairnq_testkit::{BackendFactory, StoreLocator};

/// SQLite's own floor: one INSERT per transaction into the cairnq schema,
/// WAL + synchronous FULL, straight through rusqlite, on a fresh store's
/// file (closed first, so nothing else touches it). `None` on a store that
/// is not a SQLite file.
pub(super) async fn raw_commit_rate(factory: &dyn BackendFactory, rows: usize) -> Result<Option<f64>> {
    let fresh = factory.fresh().await?;
    let Some(StoreLocator::Sqlite { path }) = fresh.locator else { return Ok(None) };
    fresh.store.close().await?;
    let storage = |e: rusqlite::Error| Error::storage("raw commit benchmark", e);
    let conn = rusqlite::Connection::open(path).map_err(storage)?;
    conn.pragma_update(None, "journal_mode", "WAL").map_err(storage)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(storage)?;
    let sql = "insert into cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms) \
               values (?1, 'noop', 'default', 'queued', '{}', 0, 0, 0)";
    let start = Instant::now();
    for _ in 0..rows {
        conn.execute(sql, [cairnq_core::backend::new_task_id()]).map_err(storage)?;
    }
    Ok(Some(per_second(rows, start.elapsed())))
}

pub(super) async fn sequential_submit(factory: &dyn BackendFactory, count: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store);
    let start = Instant::now();
    for i in 0..count {
        client.submit("noop", &json!({ "i": i })).await?;
    }
    let rate = per_second(count, start.elapsed());
    expect_count(&client, TaskStatus::Queued, count).await?;
    Ok(rate)
}

pub(super) async fn concurrent_producers(factory: &dyn BackendFactory, producers: usize, each: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
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

pub(super) fn noop_specs(count: usize, payload: &Value) -> Vec<TaskSpec> {
    (0..count).map(|_| TaskSpec::new("noop", payload)).collect()
}

pub(super) async fn bulk_submit(factory: &dyn BackendFactory, count: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
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
pub(super) async fn wait_for_drain(client: &CairnQ, calls: &AtomicUsize, count: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while calls.load(Ordering::Relaxed) < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    wait_for_count(client, TaskStatus::Succeeded, count, Duration::from_secs(60)).await
}

/// Drains `count` no-op tasks submitted up front; `submitted` runs between
/// the submit and the worker's start (untimed).
pub(super) async fn burn_down(
    factory: &dyn BackendFactory,
    count: usize,
    concurrency: usize,
    submitted: fn() -> Result<()>,
) -> Result<f64> {
    burn_down_specs(factory, noop_specs(count, &json!({})), concurrency, &[], submitted).await
}

/// Drains `specs` (no-op tasks) submitted up front with `limits` set, by
/// one worker of `concurrency`; `submitted` runs between the submit and
/// the worker's start (untimed). Tasks per second.
pub(super) async fn burn_down_specs(
    factory: &dyn BackendFactory,
    specs: Vec<TaskSpec>,
    concurrency: usize,
    limits: &[Limit],
    submitted: fn() -> Result<()>,
) -> Result<f64> {
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store.clone());
    for limit in limits {
        client.set_limit(limit).await?;
    }
    let count = specs.len();
    for chunk in specs.chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    submitted()?;
    drain_with_worker(store, &client, count, concurrency).await
}

/// Starts a `noop` worker of `concurrency` on `store` and times it until
/// `count` tasks (submitted already) show succeeded through `client`.
/// Tasks per second.
pub(super) async fn drain_with_worker(
    store: Arc<dyn Store>,
    client: &CairnQ,
    count: usize,
    concurrency: usize,
) -> Result<f64> {
    let calls = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handle = noop_worker(store, concurrency, calls.clone())?.spawn();
    wait_for_drain(client, &calls, count).await?;
    let rate = per_second(count, start.elapsed());
    handle.stop_and_join().await?;
    Ok(rate)
}

pub(super) async fn timed_calls(client: &CairnQ, calls: usize) -> Result<(f64, f64)> {
    let wait = WaitOptions::new().timeout(Duration::from_secs(30));
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls {
        let start = Instant::now();
        client.call("noop", &json!({ "i": i })).wait_options(wait).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(percentiles(samples))
}

pub(super) async fn call_in_process(factory: &dyn BackendFactory, calls: usize) -> Result<(f64, f64)> {
    let store = factory.fresh().await?.store;
    let handle = noop_worker(store.clone(), 1, Arc::default())?.spawn();
    let latency = timed_calls(&CairnQ::from_shared(store), calls).await;
    handle.stop_and_join().await?;
    latency
}

pub(super) async fn call_two_processes(factory: &dyn BackendFactory, calls: usize, exe: &Path) -> Result<(f64, f64)> {
    let fresh = factory.fresh().await?;
    // Dropping the child kills it once the calls are measured.
    let _child = spawn_noop_worker(exe, locator_of(&fresh)?, None)?;
    let client = CairnQ::from_shared(fresh.store);
    // Warm-up: the first call also waits for the child to start serving.
    client.call("noop", &json!({})).timeout(Duration::from_secs(60)).await?;
    timed_calls(&client, calls).await
}

/// Submit-to-start latency of an idle worker whose poll is 5 s: what push
/// wakeups buy (without them it would average half the poll).
pub(super) async fn wakeup_latency(factory: &dyn BackendFactory, submits: usize) -> Result<(f64, f64)> {
    let store = factory.fresh().await?.store;
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

pub(super) async fn claim_at_backlog(factory: &dyn BackendFactory, queued: usize, backing_off: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store);
    for chunk in noop_specs(queued, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let later = SubmitOptions::new().delay(Duration::from_secs(3_600));
    let delayed: Vec<TaskSpec> =
        noop_specs(backing_off, &json!({})).into_iter().map(|s| s.options(later.clone())).collect();
    for chunk in delayed.chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let worker = client.worker_session("bench", Duration::from_secs(30))?;
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["noop".into()]).limit(1);
    median_claim_ms(&worker, &draw, 200.min(queued), |claimed| claimed.len() == 1).await
}

/// The median time (ms) of `claims` claims of `draw` by `session`, each of
/// which must take what `expected` accepts (a claim that found nothing, or
/// the wrong thing, measured nothing).
pub(super) async fn median_claim_ms(
    session: &WorkerSession,
    draw: &ClaimDraw,
    claims: usize,
    expected: impl Fn(&[Task]) -> bool,
) -> Result<f64> {
    let mut samples = Vec::with_capacity(claims);
    for _ in 0..claims.max(1) {
        let start = Instant::now();
        let claimed = session.claim(vec![draw.clone()], Vec::new()).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
        if !expected(&claimed) {
            let what = format!("a claim took {} tasks, not what the workload expects", claimed.len());
            return Err(Error::validation("claim", what));
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

pub(super) async fn idle_worker_cpu(factory: &dyn BackendFactory, idle: Duration) -> Result<f64> {
    idle_cpu_percent(factory.fresh().await?.store, idle).await
}

/// An idle worker's CPU with `count` schedules on the database, none due in
/// the window (yearly specs): what the schedule loop's once-a-second due
/// check costs. Saved 64 at a time, so commits are shared.
pub(super) async fn idle_worker_schedules(factory: &dyn BackendFactory, count: usize, idle: Duration) -> Result<f64> {
    use futures::{StreamExt, TryStreamExt};
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store.clone());
    let saves = (0..count).map(|i| {
        let client = client.clone();
        async move { client.save_schedule(&Schedule::cron(format!("s{i:05}"), "0 3 1 1 *", "noop")?).await }
    });
    futures::stream::iter(saves).buffer_unordered(64).try_collect::<Vec<_>>().await?;
    let stored = client.schedules().await?.len();
    if stored != count {
        return Err(Error::validation("idle_worker_schedules", format!("{stored} schedules stored, not {count}")));
    }
    idle_cpu_percent(store, idle).await
}

/// CPU percent of one core this process spends over `idle` with a noop
/// worker (concurrency 8, default poll and schedule check) on `store`.
async fn idle_cpu_percent(store: Arc<dyn Store>, idle: Duration) -> Result<f64> {
    let handle = noop_worker(store, 8, Arc::default())?.spawn();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (cpu_before, wall_before) = (process_cpu_seconds(), Instant::now());
    tokio::time::sleep(idle).await;
    let percent = 100.0 * (process_cpu_seconds() - cpu_before) / wall_before.elapsed().as_secs_f64();
    handle.stop_and_join().await?;
    Ok(percent)
}

pub(super) async fn worker_rss(factory: &dyn BackendFactory, count: usize, exe: &Path) -> Result<f64> {
    let fresh = factory.fresh().await?;
    let locator = locator_of(&fresh)?;
    let client = CairnQ::from_shared(fresh.store.clone());
    let payload = json!({ "blob": "x".repeat(10 * 1024) });
    for chunk in noop_specs(count, &payload).chunks(1_000) {
        client.submit_many(chunk).await?;
    }
    let mut child = spawn_noop_worker(exe, locator, Some(count))?;
    let kb = peak_rss_of_drain(&mut child).await?;
    expect_count(&client, TaskStatus::Succeeded, count).await?;
    Ok(kb / 1024.0)
}
