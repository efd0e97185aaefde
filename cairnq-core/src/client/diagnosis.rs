//! What a timed-out wait tells the person reading the error: not only
//! "not finished", but what the last snapshot of the task suggests, in
//! terms a newcomer can act on.

use std::time::Duration;

use crate::clock::now_ms;
use crate::human::human_duration;
use crate::model::{Task, TaskStatus};

/// The diagnosis of a wait that ran out of time, from the last snapshot
/// (`None`: no task was visible under the id or key).
pub(crate) fn diagnose(last_seen: Option<&Task>, by_key: bool) -> String {
    let Some(task) = last_seen else {
        return if by_key {
            "no task has this key yet: was it submitted to this database (and this schema)?".to_string()
        } else {
            "no task with this id is visible: was it submitted to this database (and this schema)?".to_string()
        };
    };
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
