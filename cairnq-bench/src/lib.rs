//! End-to-end benchmark workloads, run by `cargo xtask bench` through the
//! `cairnq-bench` binary, one workload per process (so RSS and CPU readings
//! belong to that workload alone).
//!
//! Each workload takes fresh stores from a [`BackendFactory`] (the one the
//! conformance suite uses: `sqlite::SqliteFactory`, `postgres::PostgresFactory`),
//! drives the public API (`CairnQ`, `Worker`) exactly as an application
//! would, verifies its outcome from the store, and returns
//! [`Measurement`]s. Nothing here asserts speed: the numbers go to
//! BENCHMARKS.md, not to a test verdict.
//!
//! The workloads are in `workloads`; a second process (a worker in
//! another process, the RSS of a draining worker) is the [`cairnq_testkit::child`]
//! protocol's child, run by the bench binary itself (`process`).

#[cfg(doctest)]
mod book;
mod claims;
mod cpu;
mod exec;
mod fan_out;
mod floors;
mod limits;
mod pooler;
mod process;
mod processes;
mod roles;
mod scale;
mod soak;
mod telemetry;
mod timing;
mod web;
mod workloads;

use std::path::Path;
use std::time::Duration;

use cairnq_core::{CairnQ, Error, ListFilter, Result, TaskStatus};
use serde::Serialize;

use cairnq_testkit::BackendFactory;
pub use process::CHILD_FLAG;
pub use roles::{ROLE_FLAG, run_role};
pub use soak::SoakSettings;
use workloads::*;

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
    throttled: usize,
    idle: Duration,
    rss_tasks: usize,
    scale: &'static [usize],
    process_secs: f64,
    process_backlog: usize,
    soak: SoakSettings,
    schedules: usize,
    /// Tasks of each `--exec` drain (and bare spawns beside them).
    spawns: usize,
    /// Children of the flow's fan-out (`flow_fan_out`).
    fan_out: usize,
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
            throttled: 100_000,
            idle: Duration::from_secs(10),
            rss_tasks: 10_000,
            scale: &[10_000, 100_000, 1_000_000],
            process_secs: 15.0,
            process_backlog: 20_000,
            soak: SoakSettings {
                duration: Duration::from_secs(120),
                sample_every: Duration::from_secs(10),
                rate: 200.0,
                keep: Duration::from_secs(20),
                sweep_every: Duration::from_secs(5),
            },
            schedules: 10_000,
            spawns: 3_000,
            fan_out: 10_000,
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
            throttled: 1_000,
            idle: Duration::from_secs(1),
            rss_tasks: 100,
            scale: &[1_000, 5_000],
            process_secs: 2.0,
            process_backlog: 500,
            // The "2-minute version in --quick": the full soak's
            // settings for 120 s, so CI watches twelve 10 s samples.
            soak: Sizes::full().soak,
            schedules: 100,
            spawns: 40,
            fan_out: 1_000,
        }
    }

    /// These sizes with `tasks` in each burn-down (profiling runs under
    /// callgrind use a few thousand).
    pub fn with_burn(mut self, tasks: usize) -> Self {
        self.burn = tasks.max(1);
        self
    }

    /// These sizes with the soak running for `duration` (sampled every 10 s
    /// once it is a minute or longer).
    pub fn with_soak(mut self, duration: Duration) -> Self {
        self.soak.duration = duration;
        if duration >= Duration::from_secs(60) {
            self.soak.sample_every = Duration::from_secs(10);
        }
        self
    }
}

/// The workload names, in the order `cargo xtask bench` runs them.
pub const WORKLOADS: &[&str] = &[
    "raw_commit",
    "raw_submit",
    "sequential_submit",
    "concurrent_producers",
    "raw_multi_row_insert",
    "submit_many",
    "raw_burn_down",
    "burn_down_c8",
    "burn_down_c64",
    "burn_down_c8_telemetry",
    "burn_down_c64_telemetry",
    "burn_down_limited",
    "flow_fan_out",
    "call_in_process",
    "call_two_processes",
    "wakeup_latency",
    "pooler_mode",
    "claim_backlog",
    "claim_beside_throttled",
    "idle_worker_cpu",
    "idle_worker_schedules",
    "worker_rss",
    "exec_spawn",
    "serve_noop",
];

/// The growth workloads `cargo xtask bench --scale` adds (a smaller
/// version runs inside `--quick`): `scale` prints one `metric@size` point
/// per operation and size.
pub const SCALE_WORKLOADS: &[&str] = &["scale", "processes", "soak"];

/// Runs one workload on stores from `factory`. `exe` is the bench binary
/// itself: workloads that need a second process run it as a child
/// ([`CHILD_FLAG`]).
pub async fn run_workload(
    name: &str,
    factory: &dyn BackendFactory,
    sizes: Sizes,
    exe: &Path,
) -> Result<Vec<Measurement>> {
    let m = |workload: &str, metric: &str, value: f64, detail: String| Measurement {
        workload: workload.to_string(),
        backend: factory.name().to_string(),
        metric: metric.to_string(),
        value,
        detail,
    };
    Ok(match name {
        "raw_commit" => match raw_commit_rate(factory, sizes.sequential).await? {
            Some(rate) => vec![m(
                name,
                "rows_per_s",
                rate,
                format!("{} rows, one commit each, synchronous=FULL", sizes.sequential),
            )],
            None => Vec::new(),
        },
        "raw_submit" => {
            let sqlite = factory.name() == "sqlite";
            // What the engine does with a plain submit: SQLite's writer
            // runs `insert_task` and group-commits what waits; Postgres
            // coalesces waiting submits into one `insert_tasks`.
            let grouped = |group| match sqlite {
                true => floors::Inserts::OneByOne { group },
                false => floors::Inserts::MultiRow { chunk: group, group },
            };
            let one = floors::raw_insert(factory, sizes.sequential, grouped(1)).await?;
            let count = sizes.producers * sizes.per_producer;
            let group = floors::raw_insert(factory, count, grouped(sizes.producers)).await?;
            let statement = if sqlite { "insert_task" } else { "insert_tasks" };
            vec![
                m(
                    name,
                    "one_per_commit_tasks_per_s",
                    one,
                    format!("{} x {statement}, one task per commit", sizes.sequential),
                ),
                m(
                    name,
                    "grouped_tasks_per_s",
                    group,
                    format!(
                        "{count} tasks, {} per commit ({statement}), as the engine groups concurrent submits",
                        sizes.producers
                    ),
                ),
            ]
        }
        "raw_multi_row_insert" => {
            let how = floors::Inserts::MultiRow { chunk: floors::INSERT_CHUNK, group: sizes.bulk };
            let rate = floors::raw_insert(factory, sizes.bulk, how).await?;
            let detail = format!("{} tasks, insert_tasks of {} rows, one commit", sizes.bulk, floors::INSERT_CHUNK);
            vec![m(name, "tasks_per_s", rate, detail)]
        }
        "raw_burn_down" => {
            let mut out = Vec::new();
            for concurrency in [8, 64] {
                for (metric, value, detail) in floors::raw_burn_down(factory, sizes.burn, concurrency).await? {
                    out.push(m(name, &metric, value, detail));
                }
            }
            out
        }
        "sequential_submit" => {
            let rate = sequential_submit(factory, sizes.sequential).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} submits, one at a time", sizes.sequential))]
        }
        "concurrent_producers" => {
            let rate = concurrent_producers(factory, sizes.producers, sizes.per_producer).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} producers x {}", sizes.producers, sizes.per_producer))]
        }
        "submit_many" => {
            let rate = bulk_submit(factory, sizes.bulk).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} tasks in one call", sizes.bulk))]
        }
        "burn_down_c8" | "burn_down_c64" => {
            let concurrency = if name == "burn_down_c8" { 8 } else { 64 };
            let rate = burn_down(factory, sizes.burn, concurrency, || Ok(())).await?;
            vec![m(name, "tasks_per_s", rate, format!("{} no-op tasks, concurrency {concurrency}", sizes.burn))]
        }
        "burn_down_c8_telemetry" | "burn_down_c64_telemetry" => {
            let concurrency = if name == "burn_down_c8_telemetry" { 8 } else { 64 };
            // CAIRNQ_BENCH_TELEMETRY_LATE: on for the worker only, so the
            // rows carry no traceparent (what propagation costs the store).
            let late = std::env::var_os("CAIRNQ_BENCH_TELEMETRY_LATE").is_some();
            if !late {
                telemetry::install()?;
            }
            let rate =
                burn_down(factory, sizes.burn, concurrency, if late { telemetry::install } else { || Ok(()) }).await?;
            let detail = format!("as burn_down_c{concurrency}, with a metrics recorder and a span subscriber on");
            vec![m(name, "tasks_per_s", rate, detail)]
        }
        "burn_down_limited" => {
            let mut out = Vec::new();
            for concurrency in [8, 64] {
                let paired = limits::burn_down_limited_paired(factory, sizes.burn, concurrency).await?;
                let pairs = limits::PAIRS;
                let detail = format!(
                    "as burn_down_c{concurrency}, every task keyed (tenant:0..{}) under a tenant:* concurrency of {} \
                     (never binds); median of {pairs} alternated with the unlimited burn-down",
                    limits::BURN_KEYS - 1,
                    limits::ROOMY
                );
                out.push(m(name, &format!("c{concurrency}_tasks_per_s"), paired.limited, detail));
                let detail = format!("burn_down_c{concurrency} of as many tasks, median of {pairs} alternated");
                out.push(m(name, &format!("c{concurrency}_unlimited_tasks_per_s"), paired.unlimited, detail));
                let detail = format!("median of the {pairs} pairs' ratios (target >= 0.85, issue 25)");
                out.push(m(name, &format!("c{concurrency}_limited_over_unlimited"), paired.ratio, detail));
            }
            out
        }
        "flow_fan_out" => fan_out::flow_fan_out(factory, sizes.fan_out)
            .await?
            .into_iter()
            .map(|(metric, value, detail)| m(name, &metric, value, detail))
            .collect(),
        "call_in_process" => {
            let (p50, p95) = call_in_process(factory, sizes.calls).await?;
            vec![
                m(name, "p50_ms", p50, format!("{} calls, worker in this process", sizes.calls)),
                m(name, "p95_ms", p95, format!("{} calls", sizes.calls)),
            ]
        }
        "call_two_processes" => {
            let (p50, p95) = call_two_processes(factory, sizes.calls, exe).await?;
            vec![
                m(name, "p50_ms", p50, format!("{} calls, worker in another process", sizes.calls)),
                m(name, "p95_ms", p95, format!("{} calls", sizes.calls)),
            ]
        }
        "wakeup_latency" => {
            let (p50, p95) = wakeup_latency(factory, sizes.calls.min(50)).await?;
            let detail = |n| format!("{n} submits to an idle worker polling every 5 s; submit to handler start");
            vec![
                m(name, "p50_ms", p50, detail(sizes.calls.min(50))),
                m(name, "p95_ms", p95, detail(sizes.calls.min(50))),
            ]
        }
        "pooler_mode" => pooler::pooler_mode(factory, sizes)
            .await?
            .into_iter()
            .map(|(metric, value, detail)| m(name, &metric, value, detail))
            .collect(),
        "claim_backlog" => {
            let small = claim_at_backlog(factory, sizes.backlog_small, sizes.backing_off).await?;
            let large = claim_at_backlog(factory, sizes.backlog_large, sizes.backing_off).await?;
            let detail = |n| format!("claim 1 of {n} queued + {} backing off, median of 200", sizes.backing_off);
            vec![
                m(name, "small_backlog_ms", small, detail(sizes.backlog_small)),
                m(name, "large_backlog_ms", large, detail(sizes.backlog_large)),
                m(name, "large_over_small", large / small.max(1e-9), "ratio".to_string()),
            ]
        }
        "claim_beside_throttled" => {
            let (queued, throttled) = (sizes.backlog_small, sizes.throttled);
            let claims = 200.min(queued);
            let none = limits::claim_beside_throttled(factory, queued, 0, claims).await?;
            let beside = limits::claim_beside_throttled(factory, queued, throttled, claims).await?;
            let detail = |n| {
                format!(
                    "claim 1 of {queued} unlimited tasks beside {n} older tasks of a key at its limit, median of \
                     {claims}"
                )
            };
            vec![
                m(name, "none_ms", none, detail(0)),
                m(name, "throttled_ms", beside, detail(throttled)),
                m(name, "throttled_over_none", beside / none.max(1e-9), "ratio".to_string()),
            ]
        }
        "idle_worker_cpu" => {
            let percent = idle_worker_cpu(factory, sizes.idle).await?;
            vec![m(name, "cpu_percent", percent, format!("{:?} idle at the default poll (500 ms)", sizes.idle))]
        }
        "idle_worker_schedules" => {
            let percent = idle_worker_schedules(factory, sizes.schedules, sizes.idle).await?;
            let detail = format!("{:?} idle, {} schedules none due, due check every 1 s", sizes.idle, sizes.schedules);
            vec![m(name, "cpu_percent", percent, detail)]
        }
        "worker_rss" => {
            let mb = worker_rss(factory, sizes.rss_tasks, exe).await?;
            vec![m(name, "peak_rss_mb", mb, format!("{} tasks of 10 KB drained at concurrency 8", sizes.rss_tasks))]
        }
        // Processes cost the same on any backend: measured on SQLite only.
        "exec_spawn" | "serve_noop" if factory.name() != "sqlite" => Vec::new(),
        "exec_spawn" => {
            let detail = |what: &str| {
                format!(
                    "{} tasks at concurrency {}; {what}; better of 2 alternating runs",
                    sizes.spawns,
                    exec::CONCURRENCY
                )
            };
            exec::exec_spawn(factory, sizes.spawns)
                .await?
                .into_iter()
                .map(|(metric, value)| {
                    let what = if metric.starts_with("bare") {
                        "tokio tasks spawning sh -c CMD, payload on stdin, stdout read, exit awaited"
                    } else if metric.ends_with("over_bare") {
                        "ratio (target 0.8)"
                    } else {
                        "cairnq worker --exec CMD's handler on a SQLite file"
                    };
                    m(name, &metric, value, detail(what))
                })
                .collect()
        }
        "serve_noop" => {
            let detail = format!(
                "--exec true: {} tasks, --serve (a sh read loop answering null): {} tasks; concurrency {}; better of 2",
                sizes.spawns,
                sizes.spawns * 10,
                exec::CONCURRENCY
            );
            exec::serve_noop(factory, sizes.spawns)
                .await?
                .into_iter()
                .map(|(metric, value)| m(name, &metric, value, detail.clone()))
                .collect()
        }
        "scale" => {
            let points = scale::scale(factory, sizes.scale).await?;
            let detail = "85% succeeded, 5% failed, 10% queued, 1 keyed per 1000; median of 30";
            points.into_iter().map(|(metric, value)| m(name, &metric, value, detail.to_string())).collect()
        }
        "processes" => processes::processes(factory, exe, sizes.process_secs, sizes.process_backlog)
            .await?
            .into_iter()
            .map(|(metric, value, detail)| m(name, &metric, value, detail))
            .collect(),
        "soak" => {
            let s = sizes.soak;
            let detail = format!(
                "{:?} at {}/s, worker c8, retention keeps {:?} swept every {:?}, a reader opening and closing",
                s.duration, s.rate, s.keep, s.sweep_every
            );
            soak::soak(factory, s)
                .await?
                .into_iter()
                .map(|(metric, value)| m(name, &metric, value, detail.clone()))
                .collect()
        }
        other => return Err(Error::validation("workload", format!("unknown workload {other:?}"))),
    })
}

/// Now in epoch milliseconds (submit-to-start latency across processes).
fn epoch_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (pick(0.5), pick(0.95))
}

/// Checks the default queue holds `expected` tasks of `status`: a workload
/// whose outcome is wrong measured nothing.
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
    let deadline = std::time::Instant::now() + limit;
    loop {
        if expect_count(client, status, expected).await.is_ok() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            let sample = client.list(&ListFilter::new().limit(3)).await?;
            return Err(Error::validation("benchmark", format!("not drained in {limit:?}; newest rows: {sample:?}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
