//! `processes`: many processes on one database, as a deployment runs them
//! (several API processes submitting, several worker processes draining).
//! Each process is the bench binary in a role (`roles`).
//!
//! - mixed P x W: P producer processes (eight submit lanes each) and W
//!   worker processes (concurrency 8) at once for a fixed time, then the
//!   workers drain what is left: submits per second, the submit latency
//!   (on SQLite it includes the wait for the file's one write lock, the
//!   busy wait), and tasks done per second end to end. Run at 1 x 1 and
//!   4 x 4 on one database each.
//! - drain W: a backlog seeded with submit_many, drained by W worker
//!   processes: the aggregate drain rate, each worker's share, and where
//!   the CPU went (the machine's busy share; the worker processes' and, on
//!   Postgres, the server's CPU per task).
//!
//! Every run checks the outcome: every task succeeded, and the handler
//! calls summed over the workers minus the tasks is the duplicate-run count
//! (zero unless a lease expired).

use std::path::Path;
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Error, Result, SubmitOptions, TaskSpec, TaskStatus};
use serde_json::{Value, json};

use super::cpu::{MachineTicks, Server, process_cpu_seconds};
use super::process::locator_of;
use super::roles::RoleProcess;
use cairnq_testkit::{BackendFactory, StoreLocator};

/// One number: (metric, value, detail).
pub(super) type Number = (String, f64, String);

/// The whole workload: mixed 1x1 and 4x4, drain by 1 and by 4.
pub(super) async fn processes(
    factory: &dyn BackendFactory,
    exe: &Path,
    secs: f64,
    backlog: usize,
) -> Result<Vec<Number>> {
    let mut out = Vec::new();
    let one = mixed(factory, exe, 1, 1, secs).await?;
    let four = mixed(factory, exe, 4, 4, secs).await?;
    for (tag, run) in [("1x1", &one), ("4x4", &four)] {
        let detail = format!("{tag} producer x worker processes, {secs} s of submits");
        out.push((format!("mixed_{tag}_submits_per_s"), run.submits_per_s, detail.clone()));
        out.push((format!("mixed_{tag}_submit_p50_ms"), run.p50_ms, detail.clone()));
        out.push((format!("mixed_{tag}_submit_p99_ms"), run.p99_ms, detail.clone()));
        out.push((format!("mixed_{tag}_done_per_s"), run.done_per_s, detail.clone()));
        out.push((format!("mixed_{tag}_min_worker_share"), run.min_share, detail.clone()));
        out.push((format!("mixed_{tag}_duplicate_runs"), run.duplicates as f64, detail));
    }
    let ratio = |a: f64, b: f64| a / b.max(1e-9);
    out.push(("mixed_submits_4x4_over_1x1".into(), ratio(four.submits_per_s, one.submits_per_s), "ratio".into()));
    out.push(("mixed_done_4x4_over_1x1".into(), ratio(four.done_per_s, one.done_per_s), "ratio".into()));
    let drain_one = drain(factory, exe, 1, backlog).await?;
    let drain_four = drain(factory, exe, 4, backlog).await?;
    for (tag, run) in [("1", &drain_one), ("4", &drain_four)] {
        let detail = format!("{backlog} queued no-op tasks, {tag} worker process(es) of concurrency 8");
        out.push((format!("drain_{tag}_per_s"), run.done_per_s, detail.clone()));
        out.push((format!("drain_{tag}_min_worker_share"), run.min_share, detail.clone()));
        out.push((format!("drain_{tag}_duplicate_runs"), run.duplicates as f64, detail.clone()));
        // Where the cores went: a drain that does not scale says here
        // whether the server or the clients held them.
        let cpu = run.cpu.unwrap_or_default();
        let per_task = |s: f64| s * 1e6 / backlog as f64;
        out.push((format!("drain_{tag}_machine_busy"), cpu.busy, format!("{detail}; busy share of all cores")));
        out.push((format!("drain_{tag}_workers_cpu_us_per_task"), per_task(cpu.workers_s), detail.clone()));
        if cpu.server_s > 0.0 {
            out.push((format!("drain_{tag}_server_cpu_us_per_task"), per_task(cpu.server_s), detail));
        }
    }
    out.push(("drain_4_over_1".into(), ratio(drain_four.done_per_s, drain_one.done_per_s), "ratio".into()));
    Ok(out)
}

/// What one multi-process run measured.
struct Run {
    submits_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    done_per_s: f64,
    /// The least a worker ran over the mean (1.0 = perfectly even).
    min_share: f64,
    duplicates: i64,
    /// Where the CPU went (drains only).
    cpu: Option<CpuReading>,
}

async fn mixed(factory: &dyn BackendFactory, exe: &Path, producers: usize, workers: usize, secs: f64) -> Result<Run> {
    let fresh = factory.fresh().await?;
    let locator = locator_of(&fresh)?.clone();
    let client = CairnQ::from_shared(fresh.store);
    let running = spawn_workers(exe, &locator, workers).await?;
    let start = Instant::now();
    let mut making = Vec::new();
    for _ in 0..producers {
        making.push(RoleProcess::spawn(exe, "producer", &locator, &["--secs".into(), secs.to_string()])?);
    }
    let mut submitted = 0;
    let (mut p50, mut p99) = (0f64, 0f64);
    for producer in making {
        let report = producer.finish().await?;
        submitted += number(&report, "submitted")? as usize;
        p50 = p50.max(number(&report, "p50_ms")?);
        p99 = p99.max(number(&report, "p99_ms")?);
    }
    wait_drained(&client, submitted).await?;
    let elapsed = start.elapsed().as_secs_f64();
    let (min_share, duplicates) = finish_workers(running, submitted).await?;
    Ok(Run {
        submits_per_s: submitted as f64 / secs,
        p50_ms: p50,
        p99_ms: p99,
        done_per_s: submitted as f64 / elapsed,
        min_share,
        duplicates,
        cpu: None,
    })
}

/// The backlog becomes due only once every worker is serving (it is
/// submitted delayed), so a process that starts slowly does not read as
/// one starved by the others.
async fn drain(factory: &dyn BackendFactory, exe: &Path, workers: usize, backlog: usize) -> Result<Run> {
    let fresh = factory.fresh().await?;
    let locator = locator_of(&fresh)?.clone();
    let client = CairnQ::from_shared(fresh.store);
    let due_in = Duration::from_secs(5);
    let submitted = Instant::now();
    let later = SubmitOptions::new().delay(due_in);
    let specs: Vec<TaskSpec> =
        (0..backlog).map(|i| TaskSpec::new("noop", &json!({ "i": i })).options(later.clone())).collect();
    for chunk in specs.chunks(5_000) {
        client.submit_many(chunk).await?;
    }
    let running = spawn_workers(exe, &locator, workers).await?;
    let due = submitted + due_in;
    if Instant::now() > due {
        return Err(Error::validation("processes", "the workers took longer to start than the backlog's delay"));
    }
    let server = Server::of(&locator).await?;
    tokio::time::sleep_until(due.into()).await;
    let before = CpuReading::take(server.as_ref(), &running);
    let start = Instant::now();
    wait_drained(&client, backlog).await?;
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = CpuReading::take(server.as_ref(), &running).since(&before);
    let (min_share, duplicates) = finish_workers(running, backlog).await?;
    let done_per_s = backlog as f64 / elapsed;
    Ok(Run { submits_per_s: 0.0, p50_ms: 0.0, p99_ms: 0.0, done_per_s, min_share, duplicates, cpu: Some(cpu) })
}

/// CPU used during a drain: the machine's busy share, and the server's and
/// the worker processes' CPU seconds.
#[derive(Debug, Clone, Copy, Default)]
struct CpuReading {
    machine: MachineTicks,
    busy: f64,
    server_s: f64,
    workers_s: f64,
}

impl CpuReading {
    fn take(server: Option<&Server>, workers: &[RoleProcess]) -> Self {
        Self {
            machine: MachineTicks::now(),
            busy: 0.0,
            server_s: server.map_or(0.0, Server::cpu_seconds),
            workers_s: workers.iter().map(|w| process_cpu_seconds(w.pid())).sum(),
        }
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            machine: self.machine,
            busy: self.machine.busy_since(&earlier.machine),
            server_s: self.server_s - earlier.server_s,
            workers_s: self.workers_s - earlier.workers_s,
        }
    }
}

/// Starts `count` worker processes and waits until each is serving.
async fn spawn_workers(exe: &Path, locator: &StoreLocator, count: usize) -> Result<Vec<RoleProcess>> {
    let mut workers = Vec::new();
    for _ in 0..count {
        workers.push(RoleProcess::spawn(exe, "worker", locator, &[])?);
    }
    for worker in &mut workers {
        worker.ready().await?;
    }
    Ok(workers)
}

/// Stops the workers; returns the least share and the duplicate runs.
async fn finish_workers(workers: Vec<RoleProcess>, tasks: usize) -> Result<(f64, i64)> {
    let mut ran = Vec::new();
    for worker in workers {
        let report = worker.finish().await?;
        // The evidence behind a share: each process's claims and lock waits.
        eprintln!("processes: {tasks} tasks, worker process {report}");
        ran.push(number(&report, "ran")?);
    }
    let total: f64 = ran.iter().sum();
    let mean = total / ran.len().max(1) as f64;
    let least = ran.iter().copied().fold(f64::INFINITY, f64::min);
    Ok((least / mean.max(1e-9), total as i64 - tasks as i64))
}

/// Waits until the store holds `count` succeeded tasks and nothing else.
async fn wait_drained(client: &CairnQ, count: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let stats = client.stats(Some("default")).await?;
        let counts = stats.get("default").copied().unwrap_or_default();
        if counts.get(TaskStatus::Succeeded) as usize == count && counts.queued == 0 && counts.running == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::validation("processes", format!("not drained: {counts:?}, {count} submitted")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn number(report: &Value, field: &str) -> Result<f64> {
    report[field].as_f64().ok_or_else(|| Error::validation("role process", format!("no {field} in {report}")))
}
