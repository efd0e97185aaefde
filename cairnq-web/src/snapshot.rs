//! One reading of the queues, the overview's and the workers page's
//! content: counts per queue and status, the running tasks, and each
//! queue's oldest due task. Every open tab re-reads its page on each change
//! event; [`SnapshotCache`] makes that one store read per change (and per
//! [`FRESH_FOR`] at most) shared by all of them, not one per tab.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{CairnQ, ListFilter, Result, Stats, Task, TaskStatus, now_ms};
use tokio::sync::Mutex;
use tokio::time::Instant;

/// The most running tasks one reading holds.
const RUNNING_SHOWN: u32 = 500;

/// How long a reading serves page loads when nothing changed meanwhile.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// What the store said, read together (three reads started at once; the
/// store may move between them, which the overview says).
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) stats: Stats,
    /// Running tasks, newest first, at most [`RUNNING_SHOWN`].
    pub(crate) running: Vec<Task>,
    /// More tasks run than [`Snapshot::running`] holds.
    pub(crate) more_running: bool,
    /// Per queue, how long its oldest due queued task has waited; a queue
    /// with none due is absent (so is every queue on a store that cannot
    /// tell).
    pub(crate) oldest_due: BTreeMap<String, Duration>,
    /// When the reads started (epoch ms).
    pub(crate) read_at_ms: i64,
}

impl Snapshot {
    async fn read(client: &CairnQ) -> Result<Self> {
        let read_at_ms = now_ms();
        let running = ListFilter::new().status(TaskStatus::Running).limit(RUNNING_SHOWN);
        let (stats, page, ages) =
            futures::try_join!(client.stats(None), client.list(&running), client.oldest_due(None))?;
        let oldest_due = ages.into_iter().map(|age| (age.queue, age.age)).collect();
        Ok(Self { stats, more_running: page.next.is_some(), running: page.tasks, oldest_due, read_at_ms })
    }
}

/// The latest [`Snapshot`], tagged with the hub's change number it was
/// read at.
#[derive(Default)]
pub(crate) struct SnapshotCache {
    latest: Mutex<Option<(u64, Instant, Arc<Snapshot>)>>,
}

impl SnapshotCache {
    /// The latest reading when it was taken at change number `version` less
    /// than [`FRESH_FOR`] ago; else a new one. Callers arriving while a read
    /// runs wait for it and share it.
    pub(crate) async fn get(&self, version: u64, client: &CairnQ) -> Result<Arc<Snapshot>> {
        let mut latest = self.latest.lock().await;
        if let Some((at_version, at, snapshot)) = latest.as_ref()
            && *at_version == version
            && at.elapsed() < FRESH_FOR
        {
            return Ok(Arc::clone(snapshot));
        }
        let snapshot = Arc::new(Snapshot::read(client).await?);
        *latest = Some((version, Instant::now(), Arc::clone(&snapshot)));
        Ok(snapshot)
    }
}
