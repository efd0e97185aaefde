//! The chaos test: worker processes SIGKILLed at random while thousands of
//! tasks run. A durable queue promises that a crash costs time, never work:
//! no task may be lost, and a task may run again only because the process
//! that ran it before was killed. Lease tests with one task cannot show
//! that under load; real processes, real kills and a written account of
//! every run can.
//!
//! The driver lives here; [`account`] checks the run logs against the rows,
//! [`limited`] runs the same chaos over tasks under a concurrency limit.

mod account;
mod limited;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, ListFilter, SubmitOptions, Task, TaskSpec};
use serde_json::json;

use super::support::{fresh, now_ms};
use crate::child::{ChildArgs, ChildMode, ChildProcess};
use crate::{BackendFactory, StoreLocator};

pub use limited::random_sigkills_never_break_a_limit;

/// Tasks, SIGKILLs, worker processes (and the concurrency of each), their
/// lease and the schedule's seed; CI runs the defaults, a manual run scales
/// them through the environment.
#[derive(Debug, Clone, Copy)]
struct Plan {
    tasks: usize,
    kills: usize,
    workers: usize,
    concurrency: usize,
    lease_ms: u64,
    seed: u64,
    /// Kill a process whose log shows a run in its handler, when one does
    /// (else any): a test about what a cut run leaves behind needs its
    /// kills to cut runs, not to land on an idle process.
    aim: bool,
}

impl Plan {
    fn from_env() -> Self {
        Self {
            tasks: env_number("CAIRNQ_CHAOS_TASKS", 2_000),
            kills: env_number("CAIRNQ_CHAOS_KILLS", 12),
            workers: env_number::<usize>("CAIRNQ_CHAOS_WORKERS", 4).max(1),
            concurrency: 4,
            // Short, so a killed worker's tasks come back soon. Not 1 s: a
            // heartbeat or settle that waits out the lease lets a live
            // worker's task run again (a repeat no kill explains), and with
            // 8 workers on a loaded 2-core machine, SQLite writes were
            // seen waiting close to 1 s for the write lock.
            lease_ms: env_number::<u64>("CAIRNQ_CHAOS_LEASE_MS", 2_000).max(1),
            seed: env_seed(),
            aim: false,
        }
    }

    /// `max_attempts` for the plan's tasks: each killed process can have
    /// spent at most one attempt of a task, so a task that needs more was
    /// re-run without a kill, and fails to say so.
    fn max_attempts(&self) -> u32 {
        u32::try_from(self.kills).unwrap_or(u32::MAX - 1) + 1
    }
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text.parse().unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}")),
        Err(_) => default,
    }
}

/// `CAIRNQ_CHAOS_SEED`, or a random seed (every summary prints it).
fn env_seed() -> u64 {
    env_number("CAIRNQ_CHAOS_SEED", fastrand::u64(..))
}

/// How many leases the queue may make no progress at all (no task reaching
/// a terminal state) before the driver stops waiting: enough that only a
/// task that is truly stuck, never a slow machine, ends the wait.
const STALL_LEASES: u32 = 20;

/// Several `cairnq-test-worker` processes in record mode run a few thousand
/// short tasks while the test SIGKILLs one at random, again and again, and
/// starts a replacement each time; once every task is settled the survivors
/// are stopped with SIGTERM. Then the run logs (every run's start and end,
/// written before the handler goes on) are held against the rows:
///
/// - every task `succeeded` (0 lost: none failed, none stuck in `queued` or
///   `running` — lease recovery needs a live worker's claim, and there
///   always is one);
/// - each result names the worker and attempt of a logged, finished run,
///   and no attempt failed (lease recovery records no error; a failure's
///   retry would be a repeat no kill explains);
/// - every other run of a task came before that attempt, on a process the
///   test killed, and every later attempt started after that kill: each
///   repeated run is explained by a kill (a lease that lapsed under a live
///   worker is not). Each killed process can have spent at most one
///   attempt of a task, so `max_attempts` is the kill count + 1: a task
///   that needs more was re-run without a kill, and fails to say so.
///
/// The kill points are drawn from a seeded generator as task counts
/// (between 5% and 85% of the work done), so a fast machine gets as many
/// kills as a slow one. A one-line summary gives the numbers. The size:
/// `CAIRNQ_CHAOS_TASKS` (default 2,000), `CAIRNQ_CHAOS_KILLS` (12),
/// `CAIRNQ_CHAOS_WORKERS` (4), `CAIRNQ_CHAOS_LEASE_MS` (2,000) and
/// `CAIRNQ_CHAOS_SEED` (random, printed) — e.g. 5,000 tasks and 45 kills
/// for a manual run. On failure the run logs are kept and their directory
/// printed. Skipped (with a message) when the factory gives no locator.
pub async fn random_sigkills_lose_no_task(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let plan = Plan::from_env();
    let mut rng = fastrand::Rng::with_seed(plan.seed);
    let options = SubmitOptions::default().max_attempts(plan.max_attempts());
    let specs =
        (0..plan.tasks).map(|_| TaskSpec::new("record", &json!({"ms": rng.u64(1..=5)})).options(options.clone()));
    let specs = specs.collect();
    let chaos = Chaos::run(&client, locator, plan, &mut rng, specs).await;
    chaos.verdict(factory.name(), Vec::new());
}

/// One chaos run that is over: the fleet (every process, live or killed),
/// its run logs and their verdict.
struct Chaos {
    plan: Plan,
    logs: tempfile::TempDir,
    fleet: Fleet,
    runs: account::Runs,
    report: account::Report,
    /// Every task's final row.
    rows: Vec<Task>,
    began: Instant,
}

impl Chaos {
    /// Submits `specs` (record tasks), starts the plan's worker processes,
    /// kills and replaces them at the scheduled points until every task
    /// settled, stops the survivors and reads the account.
    async fn run(
        client: &CairnQ,
        locator: StoreLocator,
        plan: Plan,
        rng: &mut fastrand::Rng,
        specs: Vec<TaskSpec>,
    ) -> Self {
        let began = Instant::now();
        let submitted = submit(client, &specs).await;
        let logs = tempfile::tempdir().expect("a temp dir for the run logs");
        let mut fleet = Fleet::new(locator, logs.path(), &plan);
        for _ in 0..plan.workers {
            fleet.spawn();
        }
        drive(client, &plan, rng, &mut fleet).await;
        fleet.stop_all().await;
        let rows = client.list(&ListFilter::new().limit(u32::try_from(plan.tasks).unwrap_or(u32::MAX - 1) + 1)).await;
        let rows = rows.expect("list every task");
        assert!(rows.undecodable.is_empty(), "rows that do not decode: {:?}", rows.undecodable);
        let rows = rows.tasks;
        let runs = account::Runs::read(&fleet.members);
        let report = runs.check(&submitted, &rows, &fleet.members);
        Self { plan, logs, fleet, runs, report, rows, began }
    }

    /// Prints the one-line summary and panics with the first problems
    /// (the account's and `more` of the caller's), keeping the run logs;
    /// checks every scheduled kill happened and at least one cut a run.
    fn verdict(self, backend: &str, more: Vec<String>) {
        let (plan, report, runs) = (&self.plan, &self.report, &self.runs);
        let summary = format!(
            "chaos on {backend}: {} tasks, {} workers (lease {} ms), {} SIGKILLs, {} lost, {} tasks ran again ({} \
             extra runs: {} cut mid-handler, {} returned unsettled), {} attempts spent by kills, {} worker issues, \
             seed {}, {:.1} s",
            plan.tasks,
            plan.workers,
            plan.lease_ms,
            self.fleet.kills,
            report.lost,
            report.repeated_tasks,
            report.cut + report.unsettled,
            report.cut,
            report.unsettled,
            report.extra_attempts,
            runs.issues.len(),
            plan.seed,
            self.began.elapsed().as_secs_f64(),
        );
        println!("{summary}");
        for issue in runs.issues.iter().take(10) {
            println!("  worker issue: {issue}");
        }
        let problems: Vec<&String> = report.problems.iter().chain(&more).collect();
        if !problems.is_empty() {
            let kept = self.logs.keep();
            let shown: Vec<_> = problems.iter().take(20).map(|p| p.as_str()).collect();
            let issues: Vec<_> = runs.issues.iter().take(10).map(String::as_str).collect();
            panic!(
                "{summary}\n{} problem(s), first ones:\n  {}\nworker issues:\n  {}\nrun logs kept in {}",
                problems.len(),
                shown.join("\n  "),
                issues.join("\n  "),
                kept.display()
            );
        }
        assert_eq!(self.fleet.kills, plan.kills, "every scheduled kill happened while tasks remained ({summary})");
        assert!(
            plan.kills == 0 || report.cut + report.unsettled > 0,
            "no kill interrupted a run, so the test proved nothing ({summary})"
        );
    }
}

/// Submits `specs` in chunks and returns their ids.
async fn submit(client: &CairnQ, specs: &[TaskSpec]) -> Vec<String> {
    let mut ids = Vec::with_capacity(specs.len());
    for chunk in specs.chunks(1_000) {
        ids.extend(client.submit_many(chunk).await.expect("submit_many").into_iter().map(|t| t.id));
    }
    ids
}

/// Kills at the scheduled task counts until every task is terminal, or
/// nothing has settled for [`STALL_LEASES`] leases (the account then
/// reports the stuck tasks one by one).
async fn drive(client: &CairnQ, plan: &Plan, rng: &mut fastrand::Rng, fleet: &mut Fleet) {
    let (low, high) = (plan.tasks / 20, (plan.tasks * 17 / 20).max(plan.tasks / 20 + 1));
    let mut schedule: Vec<usize> = (0..plan.kills).map(|_| rng.usize(low..high)).collect();
    schedule.sort_unstable();
    let mut schedule = schedule.into_iter().peekable();
    let mut progress = (0, Instant::now());
    let stall = Duration::from_millis(plan.lease_ms) * STALL_LEASES;
    loop {
        let stats = client.stats(None).await.expect("stats");
        let settled: u64 = stats.values().map(|c| c.succeeded + c.failed + c.canceled).sum();
        let settled = usize::try_from(settled).unwrap_or(usize::MAX);
        if settled >= plan.tasks {
            return;
        }
        fleet.check_alive();
        // Every kill point passed since the last look is spent now: two
        // kills in one instant (maybe of a replacement still starting) are
        // chaos worth having too.
        while schedule.next_if(|&at| at <= settled).is_some() {
            let victim = fleet.victim(rng, plan.aim);
            fleet.kill(victim);
            fleet.spawn();
        }
        if settled > progress.0 {
            progress = (settled, Instant::now());
        } else if progress.1.elapsed() > stall {
            return eprintln!("stalled: {settled} of {} tasks settled, nothing more for {stall:?}", plan.tasks);
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(5..40))).await;
    }
}

/// One worker process the test started, and its run log.
struct Member {
    log: PathBuf,
    pid: u32,
    process: Option<ChildProcess>,
    /// When the test sent SIGKILL (epoch ms, taken just before).
    killed_at_ms: Option<i64>,
}

/// The worker processes, live and dead. Dropping it SIGKILLs whatever
/// still runs (each [`ChildProcess`] does), so a failed assertion leaves no
/// orphan workers behind.
struct Fleet {
    locator: StoreLocator,
    dir: PathBuf,
    lease_ms: u64,
    concurrency: usize,
    members: Vec<Member>,
    kills: usize,
}

impl Fleet {
    fn new(locator: StoreLocator, dir: &Path, plan: &Plan) -> Self {
        let (lease_ms, concurrency) = (plan.lease_ms, plan.concurrency);
        Self { locator, dir: dir.to_path_buf(), lease_ms, concurrency, members: Vec::new(), kills: 0 }
    }

    fn spawn(&mut self) {
        let log = self.dir.join(format!("child-{}.log", self.members.len()));
        let mut args = ChildArgs::new(self.locator.clone(), ChildMode::Record);
        (args.concurrency, args.lease_ms, args.drain_ms) = (self.concurrency, self.lease_ms, 2_000);
        args.log = Some(log.clone());
        let process = ChildProcess::spawn(&args).expect("start a worker process");
        self.members.push(Member { log, pid: process.id(), process: Some(process), killed_at_ms: None });
    }

    /// Indexes of the members still running.
    fn live(&self) -> Vec<usize> {
        (0..self.members.len()).filter(|&i| self.members[i].process.is_some()).collect()
    }

    /// Which live member to kill (`nth`, as [`kill`](Self::kill) takes
    /// it): any at random, or with `aim` one in the middle of a handler run
    /// by its log, when there is one.
    fn victim(&self, rng: &mut fastrand::Rng, aim: bool) -> usize {
        let live = self.live();
        let busy: Vec<usize> = match aim {
            true => (0..live.len()).filter(|&nth| account::open_runs(&self.members[live[nth]].log) > 0).collect(),
            false => Vec::new(),
        };
        match busy.is_empty() {
            true => rng.usize(..live.len()),
            false => busy[rng.usize(..busy.len())],
        }
    }

    /// SIGKILLs the `nth` live member and reaps it.
    fn kill(&mut self, nth: usize) {
        let index = self.live()[nth];
        let member = &mut self.members[index];
        let mut process = member.process.take().expect("a live member");
        member.killed_at_ms = Some(now_ms());
        process.kill().expect("SIGKILL and reap a worker process");
        self.kills += 1;
    }

    /// Panics when a worker died without being killed: a crash the test
    /// did not cause would make its repeats unexplained anyway, and is a
    /// finding in itself.
    fn check_alive(&mut self) {
        for (index, member) in self.members.iter_mut().enumerate() {
            if let Some(process) = member.process.as_mut()
                && let Some(status) = process.try_wait().expect("poll a worker process")
            {
                member.process = None;
                panic!("worker process {index} (pid {}) exited by itself: {status}", member.pid);
            }
        }
    }

    /// SIGTERMs every live member once it is serving, and checks each one
    /// drains and exits 0.
    async fn stop_all(&mut self) {
        let patience = Duration::from_secs(30);
        for index in self.live() {
            let process = self.members[index].process.as_mut().expect("a live member");
            // SIGTERM before the worker serves would kill it outright; it
            // says `ready` just before it does.
            process.line_starting("ready ", patience).await.expect("the worker process starts serving");
            process.signal("TERM").expect("SIGTERM a worker process");
        }
        for index in self.live() {
            let mut process = self.members[index].process.take().expect("a live member");
            let status = process.wait(patience).await.expect("the worker exits after SIGTERM");
            assert!(status.success(), "worker process {index} exited with {status} after SIGTERM");
        }
    }
}
