//! The client: every operation of PROTOCOL.md, validated once, over any
//! [`Store`].
//!
//! Validation happens here, before the first write, so every backend
//! refuses the same bad input with the same typed error and changes nothing.
//! That includes text a backend could not hold: every caller-supplied
//! string (names, queues, keys, ids, filters, messages) is refused when it
//! holds a NUL character, which SQLite would store and Postgres `text`
//! columns refuse with driver text.

mod after;
mod bulk;
mod diagnosis;
mod fan_out;
mod flow;
mod gauges;
mod limits;
mod reads;
mod retry;
mod schedules;
mod session;
mod steps;
mod submit;
mod wait;
mod watch;

use std::sync::Arc;

use serde::Serialize;
use tracing::Instrument;

use crate::backpressure::{Backpressure, BackpressureGate};
use crate::error::{Error, Result, require_non_negative, require_text};
use crate::model::{ListCursor, Stats, Task, TaskPage, TaskRef, fold_stats};
use crate::observe;
use crate::retention::{Retention, SweeperHandle};
use crate::store::{
    CancelParams, ChangeFeed, CountQueuedParams, FeedParams, GetParams, ListFilter, NewTask, PurgeFilter, StatsParams,
    Store, SubmitManyParams, TaskSelector,
};

pub use bulk::{BulkAction, BulkOutcome};
pub use gauges::{DEFAULT_GAUGE_INTERVAL, GaugeHandle, QueueGauges};
pub use retry::Retry;
pub use schedules::{Declared, FireReport};
pub use session::WorkerSession;
pub use submit::{Call, Submit, SubmitOptions, TaskSpec};
pub use wait::{WaitOptions, task_outcome};
pub use watch::{Signal, Watch};

/// The cairnq client: submit tasks, read them, wait for them, and the
/// store-level worker operations, over any backend.
///
/// ```no_run
/// # async fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
/// use cairnq_core::{CairnQ, WaitOptions};
/// let client = CairnQ::new(store);
/// let task = client.submit("resize", &serde_json::json!({"w": 640})).await?;
/// let done = client.wait(&task.id, &WaitOptions::default()).await?;
/// println!("{} ended {}", done.id, done.status);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CairnQ {
    store: Arc<dyn Store>,
    /// Every submit passes this gate, when set (see [`CairnQ::with_backpressure`]).
    gate: Option<Arc<BackpressureGate>>,
    /// The retention sweeper this client keeps alive, when set.
    sweeper: Option<Arc<SweeperHandle>>,
}

impl std::fmt::Debug for CairnQ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CairnQ").field("backend", &self.store.backend()).finish()
    }
}

impl CairnQ {
    /// A client over `store`.
    pub fn new(store: impl Store) -> Self {
        Self::from_shared(Arc::new(store))
    }

    /// A client over a store already shared with others (e.g. a worker).
    pub fn from_shared(store: Arc<dyn Store>) -> Self {
        Self { store, gate: None, sweeper: None }
    }

    /// The same client with backpressure: every submit (and every item of
    /// [`submit_many`](Self::submit_many)) waits while its queue is at its
    /// depth limit, then fails with [`Error::QueueFull`]. Clones share the gate.
    ///
    /// ```no_run
    /// # fn demo(client: cairnq_core::CairnQ) {
    /// use cairnq_core::Backpressure;
    /// let client = client.with_backpressure(Backpressure::new().queue("default", 1000));
    /// # }
    /// ```
    pub fn with_backpressure(mut self, settings: Backpressure) -> Self {
        self.gate = Some(Arc::new(BackpressureGate::new(settings)));
        self
    }

    /// The backpressure gate, when one is set.
    pub fn backpressure(&self) -> Option<&Arc<BackpressureGate>> {
        self.gate.as_ref()
    }

    /// The same client with a retention sweeper running in the background
    /// while this client (or a clone) is alive and not closed. Sweep errors
    /// are logged through `tracing` (a warning); use [`Retention::sweeper`] to handle them
    /// yourself. Must be called inside a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use std::time::Duration;
    /// use cairnq_core::Retention;
    /// let client = client.with_retention(Retention::new().succeeded(Duration::from_secs(86_400)))?;
    /// # Ok(()) }
    /// ```
    pub fn with_retention(mut self, retention: Retention) -> Result<Self> {
        let sweeper = retention.sweeper(self.store.clone())?;
        let handle = sweeper.spawn(|error| {
            tracing::warn!(error.kind = ?error.kind(), %error, "cairnq retention sweep failed");
        });
        self.sweeper = Some(Arc::new(handle));
        Ok(self)
    }

    /// The store under this client: private to the library, so every
    /// caller goes through a checked door (this client, or a
    /// [`WorkerSession`] for lease holders).
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// A stream of changes in `params`' queues (submits, claims, settles),
    /// from the store's own notifications: what a live view redraws on.
    pub fn change_feed(&self, params: &FeedParams) -> ChangeFeed {
        self.store.notifications().feed(params)
    }

    /// Starts a submit of `name` with `payload`; set options on the builder,
    /// then `.await` it.
    pub fn submit<P: Serialize + ?Sized>(&self, name: &str, payload: &P) -> Submit<'_> {
        Submit::new(self, TaskSpec::new(name, payload))
    }

    /// Submits one task described by a [`TaskSpec`].
    pub async fn submit_spec(&self, spec: &TaskSpec) -> Result<Task> {
        let mut task = spec.to_new_task()?;
        let span = observe::send_span(&mut task);
        async {
            self.admit(&task).await?;
            let submitted = match spec.options.after_params(&task)? {
                Some(after) => self.dependency_store("submit")?.submit_after(&after).await?,
                None => self.store.submit(&task).await?,
            };
            observe::submitted(&task.queue, &task.name);
            Ok(submitted)
        }
        .instrument(span)
        .await
    }

    async fn admit(&self, task: &NewTask) -> Result<()> {
        match &self.gate {
            Some(gate) => gate.admit(self.store.as_ref(), &task.queue).await,
            None => Ok(()),
        }
    }

    /// Submits every spec in one transaction, with the same validation and
    /// key semantics per item; all or nothing. Validation of every item
    /// happens before anything is written.
    pub async fn submit_many(&self, specs: &[TaskSpec]) -> Result<Vec<Task>> {
        if specs.iter().any(|spec| !spec.options.after.is_empty()) {
            return Err(Error::validation("after", "submit_many takes no dependencies: submit such tasks one by one"));
        }
        let tasks = specs.iter().map(TaskSpec::to_new_task).collect::<Result<Vec<_>>>()?;
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        for task in &tasks {
            self.admit(task).await?;
        }
        // One producer span per task; they end when the write is done.
        let mut tasks = tasks;
        let _spans: Vec<_> = tasks.iter_mut().map(observe::send_span).collect();
        let submitted = self.store.submit_many(&SubmitManyParams::new(tasks)).await?;
        for task in &submitted {
            observe::submitted(&task.queue, &task.name);
        }
        Ok(submitted)
    }

    /// The task with this id.
    pub async fn get(&self, task_id: &str) -> Result<Option<Task>> {
        self.store.get(&GetParams::new(by_id(task_id)?)).await
    }

    /// The task this key points at.
    pub async fn get_by_key(&self, key: &str) -> Result<Option<Task>> {
        self.store.get(&GetParams::new(by_key(key)?)).await
    }

    /// Id and status of the task with this id.
    pub async fn get_status(&self, task_id: &str) -> Result<Option<TaskRef>> {
        self.store.get_status(&GetParams::new(by_id(task_id)?)).await
    }

    /// Id and status of the task this key points at.
    pub async fn get_status_by_key(&self, key: &str) -> Result<Option<TaskRef>> {
        self.store.get_status(&GetParams::new(by_key(key)?)).await
    }

    /// Tasks matching the filter, newest first. A row that does not decode
    /// (a foreign or corrupted writer) is reported in
    /// [`TaskPage::undecodable`] instead of failing the page.
    pub async fn list(&self, filter: &ListFilter) -> Result<TaskPage> {
        check_filter(filter)?;
        if let Some(task) = self.keyed(filter).await? {
            // A key names one task: the page is that task, when it passes.
            return Ok(TaskPage::from_rows(task.filter(|t| filter.matches(t)).map(Ok)));
        }
        let rows = self.store.list(filter).await?;
        let full = filter.limit > 0 && i64::try_from(rows.len()).is_ok_and(|n| n >= filter.limit);
        let mut page = TaskPage::from_rows(rows);
        if full {
            page.next = page.tasks.last().map(ListCursor::of);
        }
        Ok(page)
    }

    /// The task a key filter names, read by key (`Some(None)`: no task
    /// has the key); `None` for a filter without a key.
    async fn keyed(&self, filter: &ListFilter) -> Result<Option<Option<Task>>> {
        match &filter.key {
            Some(key) => Ok(Some(self.get_by_key(key).await?)),
            None => Ok(None),
        }
    }

    /// Counts per queue and status, every status zero-filled; with a queue,
    /// that queue is present even when empty.
    pub async fn stats(&self, queue: Option<&str>) -> Result<Stats> {
        if let Some(queue) = queue {
            require_text("queue", queue)?;
        }
        let params = match queue {
            Some(queue) => StatsParams::new().queue(queue),
            None => StatsParams::new(),
        };
        Ok(fold_stats(self.store.stats(&params).await?, queue))
    }

    /// Headroom: `max_depth` minus the queued rows on `queue` (delayed ones
    /// included), never negative, reading at most `max_depth` rows.
    pub async fn queue_depth(&self, queue: &str, max_depth: u64) -> Result<u64> {
        require_text("queue", queue)?;
        let queued = self.store.count_queued(&CountQueuedParams::new(queue, max_depth)).await?;
        Ok(max_depth.saturating_sub(queued))
    }

    /// Cancels the task: queued -> canceled now; running -> cancel requested
    /// (the handler sees it, and its completion becomes canceled). `None`
    /// when the task is terminal or missing.
    pub async fn cancel(&self, task_id: &str) -> Result<Option<Task>> {
        self.store.cancel(&CancelParams::new(by_id(task_id)?)).await
    }

    /// [`cancel`](Self::cancel) by business key.
    pub async fn cancel_by_key(&self, key: &str) -> Result<Option<Task>> {
        self.store.cancel(&CancelParams::new(by_key(key)?)).await
    }

    /// Starts a retry of a failed or canceled task (see [`Retry`]).
    pub fn retry(&self, task_id: &str) -> Retry<'_> {
        Retry::new(self, by_id(task_id))
    }

    /// [`retry`](Self::retry) by business key.
    pub fn retry_by_key(&self, key: &str) -> Retry<'_> {
        Retry::new(self, by_key(key))
    }

    /// Deletes terminal tasks; returns the deleted ids (not in any order).
    pub async fn purge(&self, filter: &PurgeFilter) -> Result<Vec<String>> {
        filter.validate()?;
        self.store.purge(filter).await
    }

    /// Stops the retention sweeper, if any, and closes the store.
    pub async fn close(&self) -> Result<()> {
        if let Some(sweeper) = &self.sweeper {
            sweeper.stop();
        }
        self.store.close().await
    }
}

/// Refuses a negative limit or offset, and filter text a backend could
/// not hold.
pub(crate) fn check_filter(filter: &ListFilter) -> Result<()> {
    require_non_negative("limit", filter.limit)?;
    require_non_negative("offset", filter.offset)?;
    for (field, value) in [
        ("key", &filter.key),
        ("queue", &filter.queue),
        ("name", &filter.name),
        ("root_id", &filter.root_id),
        ("correlation_id", &filter.correlation_id),
    ] {
        if let Some(value) = value {
            require_text(field, value)?;
        }
    }
    if let (Some(since), Some(until)) = (filter.created_since_ms, filter.created_until_ms)
        && since > until
    {
        return Err(Error::validation("created_until", "is before created_since: no task can match"));
    }
    Ok(())
}

/// A selector for `task_id`, refused when the id holds a NUL.
pub(crate) fn by_id(task_id: &str) -> Result<TaskSelector> {
    require_text("task_id", task_id)?;
    Ok(TaskSelector::Id(task_id.to_string()))
}

/// A selector for `key`, refused when the key holds a NUL.
pub(crate) fn by_key(key: &str) -> Result<TaskSelector> {
    require_text("key", key)?;
    Ok(TaskSelector::Key(key.to_string()))
}
