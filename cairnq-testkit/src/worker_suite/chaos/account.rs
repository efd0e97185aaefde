//! The chaos test's verdict: the run logs the worker processes wrote, held
//! against the rows the store ended with. Kept apart from the driver so
//! the rules of "nothing lost, every repeat explained" read in one place.

use std::collections::HashMap;

use cairnq_core::{Task, TaskStatus};

use super::Member;
use crate::child::RecordLine;

/// One handler run, as a worker process logged it.
#[derive(Debug)]
struct Run {
    /// Index of the worker process in the fleet.
    member: usize,
    attempt: u32,
    /// When it started (epoch ms).
    at_ms: i64,
    /// When the handler returned its result (epoch ms), if it got that far.
    ended_at_ms: Option<i64>,
}

impl Run {
    fn ended(&self) -> bool {
        self.ended_at_ms.is_some()
    }
}

/// Every run of every task, from all the logs.
pub(super) struct Runs {
    by_task: HashMap<String, Vec<Run>>,
    /// Worker id -> fleet index, from each log's `child` line.
    workers: HashMap<String, usize>,
    /// Every `issue` line, naming its process.
    pub(super) issues: Vec<String>,
    /// Logs that do not read as the record mode writes them.
    problems: Vec<String>,
}

/// What the check found.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// Everything wrong, one line each.
    pub(super) problems: Vec<String>,
    /// Tasks not `succeeded` in the end.
    pub(super) lost: usize,
    /// Tasks with more than one logged run.
    pub(super) repeated_tasks: usize,
    /// Earlier runs a kill cut short inside the handler.
    pub(super) cut: usize,
    /// Earlier runs whose handler returned, killed before the result was
    /// written.
    pub(super) unsettled: usize,
    /// Attempts beyond the first over all succeeded tasks: runs cut short
    /// plus claims a killed process never started.
    pub(super) extra_attempts: u32,
}

impl Runs {
    /// Reads every member's log. A member killed before it opened its log
    /// ran nothing, so a missing log reads as an empty one.
    pub(super) fn read(members: &[Member]) -> Self {
        let mut runs =
            Self { by_task: HashMap::new(), workers: HashMap::new(), issues: Vec::new(), problems: Vec::new() };
        for (member, process) in members.iter().enumerate() {
            let text = std::fs::read_to_string(&process.log).unwrap_or_default();
            for line in text.lines() {
                match RecordLine::parse(line) {
                    Ok(RecordLine::Child { pid, worker }) => {
                        if pid != process.pid {
                            runs.problems.push(format!("process {member} (pid {}) logged pid {pid}", process.pid));
                        }
                        runs.workers.insert(worker, member);
                    }
                    Ok(RecordLine::Start { task, attempt, at_ms, .. }) => {
                        runs.by_task.entry(task).or_default().push(Run { member, attempt, at_ms, ended_at_ms: None });
                    }
                    Ok(RecordLine::End { task, attempt, at_ms, .. }) => {
                        let run = runs.by_task.get_mut(&task).and_then(|all| {
                            all.iter_mut().find(|r| r.member == member && r.attempt == attempt && !r.ended())
                        });
                        match run {
                            Some(run) => run.ended_at_ms = Some(at_ms),
                            None => runs.problems.push(format!("process {member}: {line:?} ends a run never started")),
                        }
                    }
                    Ok(RecordLine::Issue(text)) => runs.issues.push(format!("process {member}: {text}")),
                    Err(e) => runs.problems.push(format!("process {member}: {e}")),
                }
            }
        }
        runs
    }

    /// Holds the runs against the final rows of the `submitted` tasks.
    pub(super) fn check(&self, submitted: &[String], rows: &[Task], members: &[Member]) -> Report {
        let mut report = Report { problems: self.problems.clone(), ..Report::default() };
        if rows.len() != submitted.len() {
            report.problems.push(format!("{} tasks submitted, {} rows in the store", submitted.len(), rows.len()));
        }
        let rows: HashMap<&str, &Task> = rows.iter().map(|t| (t.id.as_str(), t)).collect();
        for id in submitted {
            let runs = self.by_task.get(id).map_or(&[][..], Vec::as_slice);
            let describe = || describe(runs, members);
            let Some(row) = rows.get(id.as_str()) else {
                report.lost += 1;
                report.problems.push(format!("lost: {id} vanished; runs: {}", describe()));
                continue;
            };
            if row.status != TaskStatus::Succeeded {
                report.lost += 1;
                report.problems.push(format!(
                    "lost: {id} is {} at attempt {} of {} (worker {:?}, error {}); runs: {}",
                    row.status,
                    row.attempt,
                    row.max_attempts,
                    row.worker_id,
                    row.error.as_ref().map_or("none".into(), ToString::to_string),
                    describe()
                ));
                continue;
            }
            report.extra_attempts += row.attempt.saturating_sub(1);
            if let Some(error) = &row.error {
                // Lease recovery records no error, so a kill leaves none: an
                // attempt failed, and its repeat owes nothing to a kill.
                report.problems.push(format!("{id}: an attempt failed with {error}; runs: {}", describe()));
            }
            let winner = match self.winner(row, runs, members) {
                Ok(winner) => Some(winner),
                Err(why) => {
                    report.problems.push(format!("{id}: {why}; runs: {}", describe()));
                    None
                }
            };
            let mut attempts: Vec<u32> = runs.iter().map(|r| r.attempt).collect();
            attempts.sort_unstable();
            if attempts.windows(2).any(|w| w[0] == w[1]) {
                report.problems.push(format!("{id}: one attempt ran twice; runs: {}", describe()));
            }
            if runs.len() > 1 {
                report.repeated_tasks += 1;
            }
            for run in runs.iter().enumerate().filter(|&(i, _)| Some(i) != winner).map(|(_, r)| r) {
                if explained_by_kill(run, row, runs, members) {
                    *(if run.ended() { &mut report.unsettled } else { &mut report.cut }) += 1;
                } else if winner.is_some() {
                    report.problems.push(format!(
                        "unexplained repeat: {id} attempt {} on process {} was not ended by a kill before the \
                         next attempt (the result is attempt {}); runs: {}",
                        run.attempt,
                        run.member,
                        row.attempt,
                        describe()
                    ));
                }
            }
        }
        report
    }

    /// Every run's time on a live process, as `(task, from, until)` in epoch
    /// ms: from its start until its handler returned or its process was
    /// killed, whichever came first. A run that did neither (left behind by
    /// a process the test did not kill) counts until the end of time.
    pub(super) fn live_spans<'a>(&'a self, members: &'a [Member]) -> impl Iterator<Item = (&'a str, i64, i64)> + 'a {
        self.by_task.iter().flat_map(move |(task, runs)| {
            runs.iter().map(move |run| {
                let killed = members[run.member].killed_at_ms.unwrap_or(i64::MAX);
                (task.as_str(), run.at_ms, run.ended_at_ms.unwrap_or(i64::MAX).min(killed))
            })
        })
    }

    /// For each run a kill cut short inside its handler, how long after
    /// the kill (ms) the next attempt of its task started; a cut run that
    /// never ran again is the account's problem, not counted here.
    pub(super) fn cut_waits(&self, members: &[Member]) -> Vec<i64> {
        let mut waits = Vec::new();
        for runs in self.by_task.values() {
            for run in runs.iter().filter(|r| !r.ended()) {
                let Some(killed_at) = members[run.member].killed_at_ms else { continue };
                let next = runs.iter().filter(|r| r.attempt > run.attempt).map(|r| r.at_ms).min();
                waits.extend(next.map(|at| at - killed_at));
            }
        }
        waits
    }

    /// The position in `runs` of the run whose result the row holds: the
    /// result names its worker, pid and attempt, which must be the row's
    /// worker and attempt and a finished run in that worker's log.
    fn winner(&self, row: &Task, runs: &[Run], members: &[Member]) -> Result<usize, String> {
        let result = row.result.as_ref().and_then(|r| r.to_value().ok()).unwrap_or_default();
        let (worker, pid, attempt) = (result["worker"].as_str(), result["pid"].as_u64(), result["attempt"].as_u64());
        let (Some(worker), Some(pid), Some(attempt)) = (worker, pid, attempt) else {
            return Err(format!("result {result} is not a record handler's"));
        };
        let attempt = u32::try_from(attempt).map_err(|_| format!("result {result} names no attempt"))?;
        if row.worker_id.as_deref() != Some(worker) || row.attempt != attempt {
            return Err(format!("result {result} is not from the row's worker {:?} and attempt", row.worker_id));
        }
        let member = *self.workers.get(worker).ok_or_else(|| format!("result {result} names an unknown worker"))?;
        if u64::from(members[member].pid) != pid {
            return Err(format!("result {result} names pid {pid}, process {member} was {}", members[member].pid));
        }
        runs.iter()
            .position(|r| r.member == member && r.attempt == attempt && r.ended())
            .ok_or_else(|| format!("result {result} comes from no finished run in the logs"))
    }
}

/// How many runs the log at `path` started and has not ended yet (0 when
/// there is no log yet).
pub(super) fn open_runs(path: &std::path::Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (mut started, mut ended) = (0_usize, 0_usize);
    for line in text.lines() {
        match RecordLine::parse(line) {
            Ok(RecordLine::Start { .. }) => started += 1,
            Ok(RecordLine::End { .. }) => ended += 1,
            _ => {}
        }
    }
    started.saturating_sub(ended)
}

/// Whether a run other than the one whose result stands was ended by a
/// kill: it came before the final attempt, on a process the test killed,
/// and every later attempt that ran started after the kill (a repeat that
/// began while the process still lived owes nothing to the kill).
fn explained_by_kill(run: &Run, row: &Task, runs: &[Run], members: &[Member]) -> bool {
    let Some(killed_at) = members[run.member].killed_at_ms else { return false };
    run.attempt < row.attempt && runs.iter().filter(|r| r.attempt > run.attempt).all(|r| r.at_ms >= killed_at)
}

/// `attempt 1 on process 3 (pid 812, started at T, cut, killed at K), attempt 2 on ...`.
fn describe(runs: &[Run], members: &[Member]) -> String {
    if runs.is_empty() {
        return "none logged".into();
    }
    let each = runs.iter().map(|r| {
        let member = &members[r.member];
        let killed = member.killed_at_ms.map_or(String::new(), |at| format!(", killed at {at}"));
        let how = if r.ended() { "ended" } else { "cut" };
        format!(
            "attempt {} on process {} (pid {}, started at {}, {how}{killed})",
            r.attempt, r.member, member.pid, r.at_ms
        )
    });
    each.collect::<Vec<_>>().join(", ")
}
