//! The doctor's look at the tasks themselves: running ones whose lease
//! expired (their worker died or stalled), live ones whose last attempt a
//! lease expiry ended (recovered since), the task that has waited
//! longest since it became due (the library's one definition,
//! [`CairnQ::oldest_due`]: a delayed task is not waiting), and names whose
//! due tasks wait while nothing of that name runs or finished lately (no
//! worker claims them), and whether the kept task counts agree with the
//! rows ([`counts`](super::counts)). Reads pages of the library's `list`,
//! capped, so a doctor never becomes a load test.

use std::collections::BTreeMap;

use cairnq_core::{CairnQ, ListFilter, Task, TaskStatus, now_ms};
use serde::Serialize;

use crate::db::Target;
use crate::exit::Failure;
use crate::humanize::short;

/// Rows read per page when scanning running and queued tasks.
const PAGE: u32 = 1000;
/// The most rows a scan reads.
pub(super) const SCAN_CAP: usize = 100_000;
/// A due task waiting longer than this, whose name nothing has run
/// recently, looks unclaimed.
const UNCLAIMED_AFTER_MS: i64 = 5 * 60_000;

/// What the task checks found (flattened into the report).
#[derive(Serialize)]
pub(super) struct Findings {
    pub(super) expired_leases: Vec<String>,
    /// Live (queued or running) tasks whose last ended attempt was lost to
    /// an expired lease ([`Task::lease_lost_attempt`]): a worker died or
    /// stalled. Recovered already, so not a problem by itself.
    pub(super) lost_leases: Vec<LostLease>,
    /// The task that has waited longest since it became due, on any queue.
    pub(super) oldest_due: Option<Oldest>,
    pub(super) unclaimed_names: Vec<Unclaimed>,
    /// Queues and statuses whose kept count differs from the rows.
    pub(super) miscounts: Vec<super::counts::Miscount>,
    /// True when a scan stopped at its cap.
    pub(super) scan_capped: bool,
}

#[derive(Serialize)]
pub(super) struct Oldest {
    pub(super) id: String,
    /// `None` when the task finished between the two reads.
    pub(super) name: Option<String>,
    pub(super) queue: String,
    /// How long since it became due ([`Task::due_at_ms`]).
    pub(super) waited_ms: u64,
}

#[derive(Serialize)]
pub(super) struct LostLease {
    pub(super) id: String,
    /// The attempt whose lease expired.
    pub(super) attempt: u32,
}

#[derive(Serialize)]
pub(super) struct Unclaimed {
    name: String,
    queue: String,
    waiting: u64,
    /// How long the one due longest ago has waited since it became due.
    oldest_age_ms: i64,
}

/// Runs every task check, adding what looks wrong to `problems`; the
/// findings, and the running tasks read (for the limit check).
pub(super) async fn check(
    client: &CairnQ,
    target: &Target,
    problems: &mut Vec<String>,
) -> Result<(Findings, Vec<Task>), Failure> {
    let now = now_ms();
    let (running, running_capped) = scan(client, TaskStatus::Running).await?;
    let expired_leases: Vec<String> =
        running.iter().filter(|t| t.lease_until_ms.is_some_and(|until| until < now)).map(|t| t.id.clone()).collect();
    if !expired_leases.is_empty() {
        problems.push(format!(
            "{} running task(s) hold expired leases (their worker died or stalled; the next claim recovers them)",
            expired_leases.len()
        ));
    }
    let (queued, queued_capped) = scan(client, TaskStatus::Queued).await?;
    let oldest_due = oldest_due(client).await?;
    let lost_leases = queued
        .iter()
        .chain(&running)
        .filter_map(|t| t.lease_lost_attempt().map(|attempt| LostLease { id: t.id.clone(), attempt }))
        .collect();
    let unclaimed_names = unclaimed(client, &queued, &running, now).await?;
    for u in &unclaimed_names {
        problems.push(format!(
            "{} task(s) of {:?} on queue {:?} wait (oldest {}) and none of that name ran lately: is a worker for it running?",
            u.waiting,
            u.name,
            u.queue,
            short(u.oldest_age_ms.unsigned_abs())
        ));
    }
    let miscounts = super::counts::check(client, target, problems).await?;
    let scan_capped = running_capped || queued_capped;
    Ok((Findings { expired_leases, lost_leases, oldest_due, unclaimed_names, miscounts, scan_capped }, running))
}

/// The task due longest ago across the queues, named.
async fn oldest_due(client: &CairnQ) -> Result<Option<Oldest>, Failure> {
    let Some(oldest) = client.oldest_due(None).await?.into_iter().max_by_key(|age| age.age) else {
        return Ok(None);
    };
    let name = client.get(&oldest.task_id).await?.map(|task| task.name);
    let waited_ms = u64::try_from(oldest.age.as_millis()).unwrap_or(u64::MAX);
    Ok(Some(Oldest { id: oldest.task_id, name, queue: oldest.queue, waited_ms }))
}

/// Every task in `status` (newest first), up to [`SCAN_CAP`]; whether the
/// cap was hit.
async fn scan(client: &CairnQ, status: TaskStatus) -> Result<(Vec<Task>, bool), Failure> {
    let mut filter = ListFilter::new().status(status).limit(PAGE);
    let mut tasks = Vec::new();
    loop {
        let page = client.list(&filter).await?;
        tasks.extend(page.tasks);
        if tasks.len() >= SCAN_CAP {
            return Ok((tasks, true));
        }
        match page.next {
            Some(next) => filter = filter.after(next),
            None => return Ok((tasks, false)),
        }
    }
}

/// Names with due tasks waiting past [`UNCLAIMED_AFTER_MS`] that nothing
/// runs now and nothing finished lately.
async fn unclaimed(client: &CairnQ, queued: &[Task], running: &[Task], now: i64) -> Result<Vec<Unclaimed>, Failure> {
    let mut stale: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    for task in queued.iter().filter(|t| t.attempt == 0 && t.due_at_ms() < now - UNCLAIMED_AFTER_MS) {
        let entry = stale.entry((task.name.clone(), task.queue.clone())).or_insert((0, now));
        entry.0 += 1;
        entry.1 = entry.1.min(task.due_at_ms());
    }
    let mut found = Vec::new();
    for ((name, queue), (waiting, oldest)) in stale {
        if running.iter().any(|t| t.name == name && t.queue == queue) {
            continue;
        }
        let filter = ListFilter::new().name(&name).queue(&queue).status(TaskStatus::Succeeded).limit(1);
        let recent = client.list(&filter).await?.tasks.first().and_then(|t| t.completed_at_ms);
        if recent.is_some_and(|at| at > now - UNCLAIMED_AFTER_MS) {
            continue;
        }
        found.push(Unclaimed { name, queue, waiting, oldest_age_ms: now - oldest });
    }
    Ok(found)
}
