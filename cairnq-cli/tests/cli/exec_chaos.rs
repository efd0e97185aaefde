//! The exec chaos test: `cairnq worker --exec` processes SIGKILLed at
//! random while they drain commands of varied length. A worker killed
//! outright must take its commands with it within a moment, or a command
//! runs on past its lease beside its task's retry: the same task twice at
//! once. Real processes, real kills, and a record every command appends
//! (its task, attempt, worker, start and end) show whether that happened.
//!
//! Checked: every task succeeded; no command of a killed worker was still
//! running a second after the kill (any process carrying the worker's
//! environment mark, pipelines and children included); no two runs of a
//! task overlapped (a run cut by a kill ends, at the latest, when its
//! worker's last process was seen gone); every command read its whole
//! payload; and the kills did cut runs short, or the test proved nothing.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::{ListFilter, SubmitOptions, TaskSpec, TaskStatus, now_ms};
use serde_json::json;

use crate::marked::{MARK_VAR, Mark};
use crate::support::Fixture;
use crate::worker_death::OUTLIVES_ITS_WORKER_AT_MOST;

/// Tasks, kills and workers (4 commands each): about half a minute per
/// backend on a loaded 2-core machine.
const TASKS: usize = 120;
const KILLS: usize = 5;
const WORKERS: usize = 3;
/// Longer than a command may outlive its worker (a second) plus a
/// heartbeat period (a third of it), so a retry can only start after the
/// check that its killed run is gone.
const LEASE: &str = "3s";
/// A command sleeps a few hundred ms, and one in seven a few seconds,
/// longer than the lease: many runs are cut by a kill, and a command that
/// outlived its worker would still run when its retry starts elsewhere.
fn sleep_ms(rng: &mut fastrand::Rng) -> u64 {
    if rng.u8(..7) == 0 { rng.u64(3_000..=6_000) } else { rng.u64(50..=1_500) }
}
/// How long the queue may make no progress before the driver stops waiting.
const STALL: Duration = Duration::from_secs(60);

/// Reads its payload (a sleep in ms and padding past a pipe's capacity,
/// ending `END`), then appends `start TASK ATTEMPT MARK AT_MS WHOLE`,
/// sleeps, appends `end TASK ATTEMPT MARK AT_MS`, and succeeds.
const SCRIPT: &str = r#"payload=$(cat)
case "$payload" in *'END"}') whole=1 ;; *) whole=0 ;; esac
ms=${payload#*\"ms\":}; ms=${ms%%,*}
echo "start $CAIRNQ_TASK_ID $CAIRNQ_ATTEMPT $CAIRNQ_TEST_MARK $(date +%s%3N) $whole" >> "$1"
sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
echo "end $CAIRNQ_TASK_ID $CAIRNQ_ATTEMPT $CAIRNQ_TEST_MARK $(date +%s%3N)" >> "$1"
echo '{"ok": true}'
"#;

#[tokio::test(flavor = "multi_thread")]
async fn random_sigkills_of_exec_workers_leave_no_command_running_on_sqlite() {
    chaos(Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn random_sigkills_of_exec_workers_leave_no_command_running_on_postgres() {
    chaos(Fixture::postgres().await).await;
}

async fn chaos(fixture: Fixture) {
    let seed =
        std::env::var("CAIRNQ_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let began = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("record.sh");
    std::fs::write(&script, SCRIPT).expect("write the script");
    let runs_log = dir.path().join("runs.log");
    let options = SubmitOptions::default().max_attempts(u32::try_from(KILLS).unwrap_or(1) + 1);
    let pad = "x".repeat(100_000);
    let specs: Vec<_> = (0..TASKS)
        .map(|_| TaskSpec::new("record", &json!({"ms": sleep_ms(&mut rng), "pad": format!("{pad}END")})))
        .map(|spec| spec.options(options.clone()))
        .collect();
    fixture.client.submit_many(&specs).await.expect("submit");

    let command = format!("sh {} {}", script.display(), runs_log.display());
    let mut fleet = Fleet { fixture: &fixture, command, dir: dir.path(), members: Vec::new(), problems: Vec::new() };
    for _ in 0..WORKERS {
        fleet.spawn();
    }
    drive(&fixture, &mut rng, &mut fleet).await;
    fleet.stop_all().await;

    let rows = fixture.client.list(&ListFilter::new().limit(u32::try_from(TASKS).unwrap_or(1) + 1)).await;
    let rows = rows.expect("list").tasks;
    let mut problems = std::mem::take(&mut fleet.problems);
    for row in rows.iter().filter(|row| row.status != TaskStatus::Succeeded) {
        problems.push(format!("{} ended {} at attempt {}: {:?}", row.id, row.status, row.attempt, row.error));
    }
    if rows.len() != TASKS {
        problems.push(format!("{TASKS} tasks submitted, {} rows", rows.len()));
    }
    let log = std::fs::read_to_string(&runs_log).unwrap_or_default();
    let cut = check_runs(&log, &fleet.members, &mut problems);
    let kills = fleet.members.iter().filter(|m| m.killed_at_ms.is_some()).count();
    let summary = format!(
        "exec chaos: {TASKS} tasks, {WORKERS} workers, {kills} SIGKILLs, {cut} runs cut, seed {seed}, {:.1} s",
        began.elapsed().as_secs_f64()
    );
    println!("{summary}");
    if !problems.is_empty() {
        let kept = dir.keep();
        panic!("{summary}\n{}\nrun log and worker logs kept in {}", problems.join("\n"), kept.display());
    }
    assert_eq!(kills, KILLS, "every scheduled kill happened while tasks remained ({summary})");
    assert!(cut > 0, "no kill cut a running command short, so the test proved nothing ({summary})");
}

/// Kills at task counts drawn between 5% and 85% of the work, each time
/// starting a replacement, until every task is settled.
async fn drive(fixture: &Fixture, rng: &mut fastrand::Rng, fleet: &mut Fleet<'_>) {
    let mut schedule: Vec<usize> = (0..KILLS).map(|_| rng.usize(TASKS / 20..TASKS * 17 / 20)).collect();
    schedule.sort_unstable();
    let mut schedule = schedule.into_iter().peekable();
    let mut progress = (0, Instant::now());
    loop {
        let stats = fixture.client.stats(None).await.expect("stats");
        let settled: u64 = stats.values().map(|c| c.succeeded + c.failed + c.canceled).sum();
        let settled = usize::try_from(settled).unwrap_or(usize::MAX);
        if settled >= TASKS {
            return;
        }
        while schedule.next_if(|&at| at <= settled).is_some() {
            let live: Vec<usize> = (0..fleet.members.len()).filter(|&i| fleet.members[i].process.is_some()).collect();
            fleet.kill(live[rng.usize(..live.len())]).await;
            fleet.spawn();
        }
        if settled > progress.0 {
            progress = (settled, Instant::now());
        } else if progress.1.elapsed() > STALL {
            return fleet.problems.push(format!("stalled: {settled} of {TASKS} tasks settled"));
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(5..40))).await;
    }
}

/// One `cairnq worker --exec` process, its mark and its fate.
struct Member {
    mark: Mark,
    process: Option<Child>,
    killed_at_ms: Option<i64>,
    /// When the test first saw none of its processes running after the kill.
    gone_at_ms: Option<i64>,
}

struct Fleet<'a> {
    fixture: &'a Fixture,
    command: String,
    dir: &'a Path,
    members: Vec<Member>,
    problems: Vec<String>,
}

impl Fleet<'_> {
    fn spawn(&mut self) {
        let mark = Mark::new();
        let log = std::fs::File::create(self.dir.join(format!("worker-{}.log", self.members.len()))).expect("log");
        let args = ["worker", "--exec", &self.command, "--name", "record", "--concurrency", "4", "--lease", LEASE];
        let process = self
            .fixture
            .cli
            .command(&args)
            .env(MARK_VAR, mark.value())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a worker");
        self.members.push(Member { mark, process: Some(process), killed_at_ms: None, gone_at_ms: None });
    }

    /// SIGKILLs member `index`, reaps it, and watches its commands go.
    async fn kill(&mut self, index: usize) {
        let member = &mut self.members[index];
        let mut process = member.process.take().expect("a live member");
        let killed_at = now_ms();
        member.killed_at_ms = Some(killed_at);
        process.kill().expect("SIGKILL a worker");
        process.wait().expect("reap a worker");
        let deadline = Instant::now() + OUTLIVES_ITS_WORKER_AT_MOST;
        loop {
            let live = member.mark.live();
            if live.is_empty() {
                member.gone_at_ms = Some(now_ms());
                return;
            }
            if Instant::now() > deadline {
                let late = now_ms() - killed_at;
                return self
                    .problems
                    .push(format!("worker {index} was SIGKILLed {late} ms ago; still running: {live:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERMs the survivors: each drains and exits 0.
    async fn stop_all(&mut self) {
        for member in &mut self.members {
            if let Some(process) = &member.process {
                let pid = process.id().to_string();
                let _ = std::process::Command::new("kill").args(["-TERM", &pid]).status();
            }
        }
        for (index, member) in self.members.iter_mut().enumerate() {
            let Some(mut process) = member.process.take() else { continue };
            let start = Instant::now();
            let status = loop {
                if let Some(status) = process.try_wait().expect("poll a worker") {
                    break status;
                }
                assert!(start.elapsed() < Duration::from_secs(60), "worker {index} did not stop after SIGTERM");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            if !status.success() {
                self.problems.push(format!("worker {index} exited with {status} after SIGTERM"));
            }
        }
    }
}

/// One command's run, from the record.
struct Run {
    member: usize,
    attempt: String,
    start_ms: i64,
    end_ms: Option<i64>,
}

/// Holds the record against the fleet: no run of a task overlaps another,
/// every command had its whole payload. Returns how many runs a kill cut.
fn check_runs(log: &str, members: &[Member], problems: &mut Vec<String>) -> usize {
    let member_of: HashMap<&str, usize> = members.iter().enumerate().map(|(i, m)| (m.mark.value(), i)).collect();
    let mut by_task: HashMap<&str, Vec<Run>> = HashMap::new();
    for line in log.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(&member), Some(Ok(at_ms))) =
            (fields.get(3).and_then(|mark| member_of.get(mark)), fields.get(4).map(|t| t.parse::<i64>()))
        else {
            problems.push(format!("unreadable record line {line:?}"));
            continue;
        };
        let (task, attempt) = (fields[1], fields[2]);
        match fields[0] {
            "start" => {
                if fields.get(5) != Some(&"1") {
                    problems.push(format!("{task} attempt {attempt} started on a partial payload"));
                }
                let run = Run { member, attempt: attempt.to_string(), start_ms: at_ms, end_ms: None };
                by_task.entry(task).or_default().push(run);
            }
            _ => match by_task.get_mut(task).and_then(|runs| {
                runs.iter_mut().find(|r| r.member == member && r.attempt == attempt && r.end_ms.is_none())
            }) {
                Some(run) => run.end_ms = Some(at_ms),
                None => problems.push(format!("{line:?} ends a run never started")),
            },
        }
    }
    let mut cut = 0;
    for (task, runs) in &mut by_task {
        runs.sort_by_key(|r| r.start_ms);
        let mut busy_until: Option<(i64, &str)> = None;
        for run in runs.iter() {
            if let Some((until, attempt)) = busy_until
                && run.start_ms < until
            {
                problems.push(format!(
                    "{task} ran twice at once: attempt {} started at {} while attempt {attempt} ran until {until}",
                    run.attempt, run.start_ms
                ));
            }
            let member = &members[run.member];
            // A run cut by a kill ended by the time its worker's last
            // process was seen gone (or, when it never was, runs on).
            let end = run.end_ms.or(member.gone_at_ms).unwrap_or(i64::MAX);
            if run.end_ms.is_none() {
                cut += 1;
                if member.killed_at_ms.is_none() {
                    problems.push(format!("{task} attempt {} never ended on a worker nobody killed", run.attempt));
                }
            }
            if busy_until.is_none_or(|(until, _)| end > until) {
                busy_until = Some((end, &run.attempt));
            }
        }
    }
    cut
}
