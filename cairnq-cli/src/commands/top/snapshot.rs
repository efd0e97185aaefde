//! What `top` shows at one moment, read through the library's public API:
//! stats per queue, how long each queue's oldest due task has waited (the
//! library's one definition, [`CairnQ::oldest_due`]: a delayed task is not
//! waiting), the running tasks, the newest tasks, recent failures, and
//! completion rates from the previous snapshot.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, ListFilter, QueueCounts, Task, TaskStatus, now_ms};

use crate::exit::Failure;

/// Running tasks and failures shown, at most.
const SHOWN: u32 = 50;
/// Newest tasks shown.
const LATEST: u32 = 10;

/// One queue's line.
pub(crate) struct QueueLine {
    pub(crate) name: String,
    pub(crate) counts: QueueCounts,
    /// Tasks finished per second since the previous snapshot.
    pub(crate) finished_per_s: Option<f64>,
    /// How long the oldest due task has waited; `None` when nothing is due.
    pub(crate) waited: Option<Duration>,
}

/// The view's data at one moment.
pub(crate) struct Snapshot {
    pub(crate) taken: Instant,
    pub(crate) now_ms: i64,
    pub(crate) queues: Vec<QueueLine>,
    pub(crate) running: Vec<Task>,
    /// The newest tasks, whatever their status.
    pub(crate) latest: Vec<Task>,
    pub(crate) failures: Vec<Task>,
}

impl Snapshot {
    pub(crate) async fn take(client: &CairnQ, previous: Option<&Snapshot>) -> Result<Self, Failure> {
        let taken = Instant::now();
        let stats = client.stats(None).await?;
        let before: BTreeMap<&str, u64> = previous
            .map(|p| p.queues.iter().map(|q| (q.name.as_str(), finished(&q.counts))).collect())
            .unwrap_or_default();
        let elapsed = previous.map(|p| taken.duration_since(p.taken).as_secs_f64());
        let mut waited: BTreeMap<String, Duration> =
            client.oldest_due(None).await?.into_iter().map(|age| (age.queue, age.age)).collect();
        let mut queues = Vec::with_capacity(stats.len());
        for (name, counts) in stats {
            let finished_per_s = match (elapsed, before.get(name.as_str())) {
                (Some(secs), Some(then)) if secs > 0.0 => Some(finished(&counts).saturating_sub(*then) as f64 / secs),
                _ => None,
            };
            let waited = waited.remove(&name);
            queues.push(QueueLine { name, counts, finished_per_s, waited });
        }
        let running = client.list(&ListFilter::new().status(TaskStatus::Running).limit(SHOWN)).await?.tasks;
        let latest = client.list(&ListFilter::new().limit(LATEST)).await?.tasks;
        let mut failures = client.list(&ListFilter::new().status(TaskStatus::Failed).limit(SHOWN)).await?.tasks;
        failures.sort_by_key(|task| std::cmp::Reverse(task.completed_at_ms.unwrap_or(task.updated_at_ms)));
        Ok(Self { taken, now_ms: now_ms(), queues, running, latest, failures })
    }
}

/// Tasks that reached a final state.
fn finished(counts: &QueueCounts) -> u64 {
    counts.succeeded + counts.failed + counts.canceled
}
