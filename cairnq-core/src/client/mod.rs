//! The client: every operation of PROTOCOL.md, validated once, over any
//! [`Store`].
//!
//! Validation happens here, before the first write, so every backend
//! refuses the same bad input with the same typed error and changes nothing.
//! That includes text a backend could not hold: every caller-supplied
//! string (names, queues, keys, ids, filters, messages) is refused when it
//! holds a NUL character, which SQLite would store and Postgres `text`
//! columns refuse with driver text.

mod diagnosis;
mod limits;
mod reads;
mod retry;
mod schedules;
mod submit;
mod wait;
mod watch;

use std::sync::Arc;

use serde::Serialize;
use tracing::Instrument;

use crate::backpressure::{Backpressure, BackpressureGate};
use crate::clock::require_span_ms;
use crate::error::{Error, Result, require_non_empty, require_non_negative, require_positive, require_text};
use crate::model::{HeldLease, ListCursor, Stats, Task, TaskPage, TaskRef, fold_stats};
use crate::observe;
use crate::retention::{Retention, SweeperHandle};
use crate::store::{
    CancelParams, ClaimParams, CompleteBatchParams, CountQueuedParams, FailParams, GetParams, HeartbeatBatchParams,
    HeartbeatParams, ListFilter, NewTask, ProgressParams, PurgeFilter, SettleParams, StatsParams, Store,
    SubmitManyParams, TaskSelector,
};

pub use retry::Retry;
pub use schedules::{Declared, FireReport};
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

    /// The store under this client.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
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
            let submitted = self.store.submit(&task).await?;
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
        let rows = self.store.list(filter).await?;
        let full = filter.limit > 0 && i64::try_from(rows.len()).is_ok_and(|n| n >= filter.limit);
        let mut page = TaskPage::from_rows(rows);
        if full {
            page.next = page.tasks.last().map(ListCursor::of);
        }
        Ok(page)
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

    /// Claims due tasks (lease recovery first), see [`Store::claim`].
    pub async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        require_lease_ms(params.lease_ms)?;
        require_non_empty("worker_id", &params.worker_id)?;
        require_text("worker_id", &params.worker_id)?;
        for draw in &params.draws {
            draw.queues.iter().try_for_each(|queue| require_text("queues", queue))?;
            draw.names.iter().flatten().try_for_each(|name| require_text("names", name))?;
        }
        self.store.claim(params).await
    }

    /// Extends one lease.
    pub async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        require_lease_ms(params.lease_ms)?;
        require_owner(&params.task_id, &params.worker_id)?;
        self.store.heartbeat(params).await
    }

    /// Extends many leases; returns those still held, in the order asked.
    pub async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        require_lease_ms(params.lease_ms)?;
        require_text("worker_id", &params.worker_id)?;
        params.task_ids.iter().try_for_each(|id| require_text("task_ids", id))?;
        if params.task_ids.is_empty() {
            return Ok(Vec::new());
        }
        self.store.heartbeat_batch(params).await
    }

    /// Records progress (0..1) and/or a message; `None` keeps the old value.
    pub async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        if let Some(p) = params.progress
            && !(0.0..=1.0).contains(&p)
        {
            return Err(Error::validation("progress", format!("{p} is outside 0..1")));
        }
        require_owner(&params.task_id, &params.worker_id)?;
        if let Some(message) = &params.message {
            require_text("message", message)?;
        }
        self.store.progress(params).await
    }

    /// Running -> succeeded (ignores a pending cancel: the raw primitive).
    pub async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        require_owner(&params.task_id, &params.worker_id)?;
        self.store.succeed(params).await
    }

    /// Running -> succeeded, or canceled when a cancel is pending.
    pub async fn complete(&self, params: &SettleParams) -> Result<Task> {
        require_owner(&params.task_id, &params.worker_id)?;
        self.store.complete(params).await
    }

    /// Completes many tasks of one worker in one write (see
    /// [`Store::complete_batch`]): the tasks settled, in the order asked.
    ///
    /// ```
    /// # use cairnq_core::store::CompleteBatchParams;
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// let params = CompleteBatchParams::new("worker-1", vec![("t1".into(), serde_json::json!(1).into())]);
    /// let settled = client.complete_batch(&params).await?;
    /// assert!(settled.len() <= 1);
    /// # Ok(()) }
    /// ```
    pub async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        let mut seen = std::collections::HashSet::with_capacity(params.completions.len());
        if let Some((twice, _)) = params.completions.iter().find(|(id, _)| !seen.insert(id.as_str())) {
            return Err(Error::validation("completions", format!("task {twice} is listed twice")));
        }
        require_text("worker_id", &params.worker_id)?;
        params.completions.iter().try_for_each(|(id, _)| require_text("completions", id))?;
        if params.completions.is_empty() {
            return Ok(Vec::new());
        }
        self.store.complete_batch(params).await
    }

    /// Fails an attempt (requeue, fail, or cancel-wins).
    pub async fn fail(&self, params: &FailParams) -> Result<Task> {
        require_span_ms("delay_ms", params.delay_ms)?;
        require_owner(&params.task_id, &params.worker_id)?;
        if !params.error.is_object() {
            return Err(Error::validation("error", "must be an error envelope object"));
        }
        self.store.fail(params).await
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
        ("queue", &filter.queue),
        ("name", &filter.name),
        ("root_id", &filter.root_id),
        ("correlation_id", &filter.correlation_id),
    ] {
        if let Some(value) = value {
            require_text(field, value)?;
        }
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

/// A lease of at least 1 ms that now plus it can be stored (see
/// [`MAX_DELAY`](crate::MAX_DELAY)).
fn require_lease_ms(lease_ms: i64) -> Result<()> {
    require_positive("lease_ms", lease_ms)?;
    require_span_ms("lease_ms", lease_ms)
}

/// The task and worker of an ownership-checked write, as text every
/// backend can hold.
fn require_owner(task_id: &str, worker_id: &str) -> Result<()> {
    require_text("task_id", task_id)?;
    require_text("worker_id", worker_id)
}
