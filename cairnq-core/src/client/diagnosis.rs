//! What a timed-out wait tells the person reading the error: not only
//! "not finished", but what the last snapshot of the task suggests, in
//! terms a newcomer can act on — including that its flow-control limit is
//! what holds it back, when it is.

use std::time::Duration;

use super::CairnQ;
use crate::backend::LimitBook;
use crate::clock::now_ms;
use crate::human::human_duration;
use crate::model::{Task, TaskStatus};
use crate::store::{LimitUsageParams, LimitsQuery};

/// Why a due queued task's limit holds it back now, read from the store:
/// its key runs as many as the limit allows, or the rate admits no start
/// yet. `None` when the task is not queued and due, has no key, no limit
/// applies, the limit has room, or the limits cannot be read (a database
/// without the limits table): the diagnosis then says what it would have.
pub(crate) async fn limit_hold(client: &CairnQ, task: &Task) -> Option<String> {
    if task.status != TaskStatus::Queued || task.run_at_ms > now_ms() {
        return None;
    }
    let key = task.limit_key()?;
    let rows = client.store.limits(&LimitsQuery::all()).await.ok()?;
    let book = LimitBook::new(&rows);
    let governing = book.governing(&key)?;
    let row = rows.iter().find(|r| r.key == governing)?;
    let usage = client.store.limit_usage(&LimitUsageParams::new()).await.ok()?;
    let mine = usage.keys.iter().find(|k| k.key == key);
    let (running, waiting) = mine.map_or((0, 0), |k| (k.running, k.waiting));
    let limit = if governing == key { "its limit".to_string() } else { format!("the limit {governing:?}") };
    if let Some(most) = row.concurrency.filter(|most| running >= most.unsigned_abs()) {
        return Some(format!(
            "waiting on its limit: key {key:?} runs {running} of the {most} {limit} allows at once ({waiting} of its \
             tasks queued); one starts when a running one ends"
        ));
    }
    let rate = book.rate(&key)?;
    let next = rate.next_admit(mine.and_then(|k| k.tat_ms), usage.now_ms);
    let (count, period) = (row.rate_count?, row.rate_period_ms?);
    (next > usage.now_ms).then(|| {
        let period = human_duration(Duration::from_millis(period.unsigned_abs()));
        let wait = human_duration(Duration::from_millis((next - usage.now_ms).unsigned_abs()));
        format!(
            "waiting on its limit: {limit} paces key {key:?} to {count} starts per {period}, and admits the next \
             in {wait} ({waiting} of its tasks queued)"
        )
    })
}

/// The diagnosis of a wait that ran out of time, from the last snapshot
/// (`None`: no task was visible under the id or key) and, for a queued
/// task its limit holds back, what [`limit_hold`] found.
pub(crate) fn diagnose(last_seen: Option<&Task>, by_key: bool, limit_hold: Option<String>) -> String {
    let Some(task) = last_seen else {
        return if by_key {
            "no task has this key yet: was it submitted to this database (and this schema)?".to_string()
        } else {
            "no task with this id is visible: was it submitted to this database (and this schema)?".to_string()
        };
    };
    if let Some(hold) = limit_hold {
        return hold;
    }
    let now_ms = now_ms();
    match task.status {
        TaskStatus::Queued if task.run_at_ms > now_ms => {
            let due_in = Duration::from_millis((task.run_at_ms - now_ms).unsigned_abs());
            format!("it is delayed: not claimable for another {}", human_duration(due_in))
        }
        TaskStatus::Queued if task.attempt == 0 => format!(
            "never claimed: is a worker with a handler for {:?} on queue {:?} running against this database?",
            task.name, task.queue
        ),
        TaskStatus::Queued => {
            // A retry clears the row's worker, so a last worker is named
            // only when some writer left it.
            let last = task.worker_id.as_deref().map_or_else(String::new, |w| format!(" (last worker {w})"));
            format!(
                "waiting for attempt {} of {} after a failure or an expired lease{last}: is a worker with a handler \
                 for {:?} on queue {:?} still running against this database?",
                task.attempt + 1,
                task.max_attempts,
                task.name,
                task.queue
            )
        }
        TaskStatus::Running => {
            let progress = task.progress.map_or_else(String::new, |p| format!(", progress {:.0}%", p * 100.0));
            let cancel = if task.cancel_requested_at_ms.is_some() { ", cancel requested" } else { "" };
            format!(
                "running on worker {} (attempt {} of {}{progress}{cancel})",
                task.worker_id.as_deref().unwrap_or("unknown"),
                task.attempt,
                task.max_attempts
            )
        }
        terminal => format!("it ended {terminal} just as the wait gave up"),
    }
}
