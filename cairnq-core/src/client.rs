//! The client: every operation of PROTOCOL.md, validated once, over any
//! [`Store`].
//!
//! Validation happens here, before the first write, so every backend
//! refuses the same bad input with the same typed error and changes nothing.
//! That includes text a backend could not hold: every caller-supplied
//! string (names, queues, keys, ids, filters, messages) is refused when it
//! holds a NUL character, which SQLite would store and Postgres `text`
//! columns refuse with driver text.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::HeldLease;
use crate::backpressure::{Backpressure, BackpressureGate};
use crate::envelope::ErrorEnvelope;
use crate::error::{Error, Result, require_non_empty, require_non_negative, require_positive, require_text};
use crate::id::new_task_id;
use crate::json::Json;
use crate::keys::Conflict;
use crate::model::{Stats, Task, TaskPage, TaskRef, TaskStatus, fold_stats};
use crate::retention::{Retention, SweeperHandle};
use crate::store::{
    ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, NewTask, ProgressParams,
    SettleParams, Store, TaskSelector, Wake,
};
pub use crate::store::{ListFilter, PurgeFilter};

/// Options of a submit. `Default` gives PROTOCOL.md's defaults: queue
/// `default`, max_attempts 3, priority 0, no delay, no key.
///
/// ```
/// use cairnq_core::{Conflict, SubmitOptions};
/// let opts = SubmitOptions::new().key("invoice-42").conflict(Conflict::Reject).priority(5);
/// assert_eq!(opts.queue, "default");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubmitOptions {
    /// Business key: at most one live task per key (see [`Conflict`]).
    pub key: Option<String>,
    /// What to do when the key already points at a task.
    pub conflict: Conflict,
    /// Queue name.
    pub queue: String,
    /// Higher runs first; must fit in i32.
    pub priority: i64,
    /// Claims allowed before a retryable failure becomes final; >= 1.
    pub max_attempts: i64,
    /// Not claimable before now + delay; >= 0.
    pub delay_ms: i64,
    /// A JSON object of caller metadata.
    pub metadata: Option<Json>,
    /// The submitting task.
    pub parent_id: Option<String>,
    /// The chain's first task (defaults to the new task's own id).
    pub root_id: Option<String>,
    /// Caller-chosen correlation id.
    pub correlation_id: Option<String>,
}

impl Default for SubmitOptions {
    fn default() -> Self {
        Self {
            key: None,
            conflict: Conflict::Reuse,
            queue: "default".to_string(),
            priority: 0,
            max_attempts: 3,
            delay_ms: 0,
            metadata: None,
            parent_id: None,
            root_id: None,
            correlation_id: None,
        }
    }
}

impl SubmitOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the business key.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the conflict strategy.
    pub fn conflict(mut self, conflict: Conflict) -> Self {
        self.conflict = conflict;
        self
    }

    /// Sets the queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    /// Sets the priority.
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    /// Sets max_attempts.
    pub fn max_attempts(mut self, max_attempts: i64) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Delays the first claim by `delay_ms` milliseconds.
    pub fn delay_ms(mut self, delay_ms: i64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// Delays the first claim.
    pub fn delay(self, delay: Duration) -> Self {
        self.delay_ms(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
    }

    /// Sets the metadata object (a `serde_json::Value` or a [`Json`]).
    pub fn metadata(mut self, metadata: impl Into<Json>) -> Self {
        self.metadata = Some(metadata.into());
        self
    }

    /// Sets the parent task.
    pub fn parent_id(mut self, id: impl Into<String>) -> Self {
        self.parent_id = Some(id.into());
        self
    }

    /// Sets the root task.
    pub fn root_id(mut self, id: impl Into<String>) -> Self {
        self.root_id = Some(id.into());
        self
    }

    /// Sets the correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Validates the options for `name` and `payload` and builds the row to
    /// insert, with a fresh id.
    pub fn to_new_task(&self, name: &str, payload: Json) -> Result<NewTask> {
        require_non_empty("name", name)?;
        require_text("name", name)?;
        require_non_empty("queue", &self.queue)?;
        require_text("queue", &self.queue)?;
        if let Some(key) = &self.key {
            require_non_empty("key", key)?;
            require_text("key", key)?;
        }
        for (field, value) in
            [("parent_id", &self.parent_id), ("root_id", &self.root_id), ("correlation_id", &self.correlation_id)]
        {
            if let Some(value) = value {
                require_text(field, value)?;
            }
        }
        let priority = i32::try_from(self.priority)
            .map_err(|_| Error::validation("priority", format!("{} is outside the 32-bit range", self.priority)))?;
        require_positive("max_attempts", self.max_attempts)?;
        let max_attempts = i32::try_from(self.max_attempts).map_err(|_| {
            Error::validation("max_attempts", format!("{} is outside the 32-bit range", self.max_attempts))
        })?;
        require_non_negative("delay_ms", self.delay_ms)?;
        let metadata = match &self.metadata {
            None => Json::empty_object(),
            Some(m) if m.is_object() => m.clone(),
            Some(_) => return Err(Error::validation("metadata", "must be a JSON object")),
        };
        let id = new_task_id();
        Ok(NewTask {
            root_id: self.root_id.clone().unwrap_or_else(|| id.clone()),
            id,
            name: name.to_string(),
            queue: self.queue.clone(),
            payload,
            metadata,
            max_attempts,
            priority,
            delay_ms: self.delay_ms,
            parent_id: self.parent_id.clone(),
            correlation_id: self.correlation_id.clone(),
            key: self.key.clone(),
            conflict: self.conflict,
        })
    }
}

/// How `wait` and `call` poll: `get_status` every `poll`, growing 1.5x up to
/// `max_poll`, until `timeout`. Defaults: 30 s, 100 ms, 500 ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitOptions {
    /// Give up (TaskTimeout) after this long; the task keeps running.
    pub timeout: Duration,
    /// First poll interval.
    pub poll: Duration,
    /// Largest poll interval.
    pub max_poll: Duration,
}

impl Default for WaitOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            poll: Duration::from_millis(100),
            max_poll: Duration::from_millis(500),
        }
    }
}

impl WaitOptions {
    /// The defaults with another timeout.
    pub fn timeout(timeout: Duration) -> Self {
        Self { timeout, ..Self::default() }
    }

    /// With other poll intervals.
    pub fn polling(mut self, poll: Duration, max_poll: Duration) -> Self {
        self.poll = poll;
        self.max_poll = max_poll.max(poll);
        self
    }
}

/// A task to submit: name, payload and options. Used by
/// [`CairnQ::submit_many`] and built by [`CairnQ::submit`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    /// Handler name.
    pub name: String,
    /// The payload (already JSON, or the error converting it).
    payload: std::result::Result<Json, String>,
    /// Options.
    pub options: SubmitOptions,
}

impl TaskSpec {
    /// A task with default options. A payload JSON cannot hold is reported
    /// when the spec is submitted.
    pub fn new<P: Serialize + ?Sized>(name: impl Into<String>, payload: &P) -> Self {
        let payload = Json::encode(payload).map_err(|e| match e {
            Error::Serialization(message) => message,
            other => other.to_string(),
        });
        Self { name: name.into(), payload, options: SubmitOptions::default() }
    }

    /// With these options.
    pub fn options(mut self, options: SubmitOptions) -> Self {
        self.options = options;
        self
    }

    fn to_new_task(&self) -> Result<NewTask> {
        let payload = self.payload.clone().map_err(Error::Serialization)?;
        self.options.to_new_task(&self.name, payload)
    }
}

/// A submit under construction; `.await` it to submit.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// let task = client
///     .submit("send_email", &serde_json::json!({"to": "a@example.com"}))
///     .key("welcome:a@example.com")
///     .priority(10)
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a submit does nothing until it is awaited"]
pub struct Submit<'a> {
    client: &'a CairnQ,
    spec: TaskSpec,
}

macro_rules! forward_options {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            #[doc = concat!("See [`SubmitOptions::", stringify!($method), "`].")]
            pub fn $method(mut self, value: $ty) -> Self {
                self.spec.options = self.spec.options.$method(value);
                self
            }
        )*
    };
}

impl<'a> Submit<'a> {
    forward_options!(
        key(&str),
        conflict(Conflict),
        queue(&str),
        priority(i64),
        max_attempts(i64),
        delay_ms(i64),
        delay(Duration),
        metadata(impl Into<Json>),
        parent_id(&str),
        root_id(&str),
        correlation_id(&str),
    );

    /// Replaces every option at once.
    pub fn options(mut self, options: SubmitOptions) -> Self {
        self.spec.options = options;
        self
    }
}

impl<'a> IntoFuture for Submit<'a> {
    type Output = Result<Task>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Task>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.client.submit_spec(&self.spec).await })
    }
}

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
    /// are written to stderr; use [`Retention::sweeper`] to handle them
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
        let handle = sweeper.spawn(|e| eprintln!("cairnq retention sweep failed: {e}"));
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
        Submit { client: self, spec: TaskSpec::new(name, payload) }
    }

    /// Submits one task described by a [`TaskSpec`].
    pub async fn submit_spec(&self, spec: &TaskSpec) -> Result<Task> {
        let task = spec.to_new_task()?;
        self.admit(&task).await?;
        self.store.submit(&task).await
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
        self.store.submit_many(&tasks).await
    }

    /// The task with this id.
    pub async fn get(&self, task_id: &str) -> Result<Option<Task>> {
        self.store.get(&by_id(task_id)?).await
    }

    /// The task this key points at.
    pub async fn get_by_key(&self, key: &str) -> Result<Option<Task>> {
        self.store.get(&by_key(key)?).await
    }

    /// Id and status of the task with this id.
    pub async fn get_status(&self, task_id: &str) -> Result<Option<TaskRef>> {
        self.store.get_status(&by_id(task_id)?).await
    }

    /// Id and status of the task this key points at.
    pub async fn get_status_by_key(&self, key: &str) -> Result<Option<TaskRef>> {
        self.store.get_status(&by_key(key)?).await
    }

    /// Tasks matching the filter, newest first. A row that does not decode
    /// (a foreign or corrupted writer) is reported in
    /// [`TaskPage::undecodable`] instead of failing the page.
    pub async fn list(&self, filter: &ListFilter) -> Result<TaskPage> {
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
        Ok(TaskPage::from_rows(self.store.list(filter).await?))
    }

    /// Counts per queue and status, every status zero-filled; with a queue,
    /// that queue is present even when empty.
    pub async fn stats(&self, queue: Option<&str>) -> Result<Stats> {
        if let Some(queue) = queue {
            require_text("queue", queue)?;
        }
        let counts = self.store.stats(queue).await?;
        Ok(fold_stats(counts, queue))
    }

    /// Headroom: `max_depth` minus the queued rows on `queue` (delayed ones
    /// included), never negative, reading at most `max_depth` rows.
    pub async fn queue_depth(&self, queue: &str, max_depth: i64) -> Result<u64> {
        require_non_negative("max_depth", max_depth)?;
        require_text("queue", queue)?;
        let max_depth = u64::try_from(max_depth).unwrap_or(0);
        let queued = self.store.count_queued(queue, max_depth).await?;
        Ok(max_depth.saturating_sub(queued))
    }

    /// Cancels the task: queued -> canceled now; running -> cancel requested
    /// (the handler sees it, and its completion becomes canceled). `None`
    /// when the task is terminal or missing.
    pub async fn cancel(&self, task_id: &str) -> Result<Option<Task>> {
        self.store.cancel(&by_id(task_id)?).await
    }

    /// [`cancel`](Self::cancel) by business key.
    pub async fn cancel_by_key(&self, key: &str) -> Result<Option<Task>> {
        self.store.cancel(&by_key(key)?).await
    }

    /// Requeues a failed or canceled task now; `None` otherwise.
    pub async fn retry(&self, task_id: &str, reset_attempt: bool) -> Result<Option<Task>> {
        self.store.retry(&by_id(task_id)?, reset_attempt).await
    }

    /// [`retry`](Self::retry) by business key.
    pub async fn retry_by_key(&self, key: &str, reset_attempt: bool) -> Result<Option<Task>> {
        self.store.retry(&by_key(key)?, reset_attempt).await
    }

    /// Deletes terminal tasks; returns the deleted ids (not in any order).
    pub async fn purge(&self, filter: &PurgeFilter) -> Result<Vec<String>> {
        filter.validate()?;
        self.store.purge(filter).await
    }

    /// Waits until the task is terminal and returns its row, whatever the
    /// outcome (use [`task_outcome`] or [`call`](Self::call) to turn failure
    /// into an error). On timeout: [`Error::TaskTimeout`], and the task keeps
    /// running. A task that does not exist: [`Error::NotFound`].
    pub async fn wait(&self, task_id: &str, options: &WaitOptions) -> Result<Task> {
        self.wait_selected(by_id(task_id)?, options).await
    }

    /// [`wait`](Self::wait) for the task a key points at (resolved once).
    pub async fn wait_by_key(&self, key: &str, options: &WaitOptions) -> Result<Task> {
        self.wait_selected(by_key(key)?, options).await
    }

    async fn wait_selected(&self, selector: TaskSelector, options: &WaitOptions) -> Result<Task> {
        let deadline = Instant::now() + options.timeout;
        let by_id = match selector {
            TaskSelector::Id(_) => selector,
            TaskSelector::Key(_) => match self.store.get_status(&selector).await? {
                Some(found) => TaskSelector::Id(found.id),
                None => return Err(Error::NotFound { task_id: selector.as_str().to_string() }),
            },
        };
        let wake = Wake::TaskDone(by_id.as_str().to_string());
        let mut poll = options.poll;
        loop {
            // Watch first, then read: a finish committed after the read
            // still ends the wait below.
            let watch = self.store.watch_for_change(&wake);
            let status = self
                .store
                .get_status(&by_id)
                .await?
                .ok_or_else(|| Error::NotFound { task_id: by_id.as_str().to_string() })?;
            if status.status.is_terminal()
                && let Some(task) = self.store.get(&by_id).await?
                && task.status.is_terminal()
            {
                return Ok(task);
            }
            let now = Instant::now();
            if now >= deadline {
                let timeout_ms = u64::try_from(options.timeout.as_millis()).unwrap_or(u64::MAX);
                return Err(Error::TaskTimeout { task_id: status.id, timeout_ms });
            }
            let _ = tokio::time::timeout(poll.min(deadline - now), watch).await;
            poll = poll.mul_f64(1.5).min(options.max_poll.max(options.poll));
        }
    }

    /// Submits and waits: the task's result, or [`Error::TaskFailed`],
    /// [`Error::TaskCanceled`] or [`Error::TaskTimeout`].
    pub async fn call<P: Serialize + ?Sized>(
        &self,
        name: &str,
        payload: &P,
        submit: &SubmitOptions,
        wait: &WaitOptions,
    ) -> Result<Json> {
        let spec = TaskSpec::new(name, payload).options(submit.clone());
        let task = self.submit_spec(&spec).await?;
        let done = self.wait(&task.id, wait).await?;
        task_outcome(done)
    }

    /// Claims due tasks (lease recovery first), see [`Store::claim`].
    pub async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        require_positive("lease_ms", params.lease_ms)?;
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
        require_positive("lease_ms", params.lease_ms)?;
        require_owner(&params.task_id, &params.worker_id)?;
        self.store.heartbeat(params).await
    }

    /// Extends many leases; returns those still held, in the order asked.
    pub async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        require_positive("lease_ms", params.lease_ms)?;
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
        require_non_negative("delay_ms", params.delay_ms)?;
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

/// A selector for `task_id`, refused when the id holds a NUL.
fn by_id(task_id: &str) -> Result<TaskSelector> {
    require_text("task_id", task_id)?;
    Ok(TaskSelector::Id(task_id.to_string()))
}

/// A selector for `key`, refused when the key holds a NUL.
fn by_key(key: &str) -> Result<TaskSelector> {
    require_text("key", key)?;
    Ok(TaskSelector::Key(key.to_string()))
}

/// The task and worker of an ownership-checked write, as text every
/// backend can hold.
fn require_owner(task_id: &str, worker_id: &str) -> Result<()> {
    require_text("task_id", task_id)?;
    require_text("worker_id", worker_id)
}

/// A terminal task's outcome: its result when it succeeded, else the
/// matching error ([`Error::TaskFailed`] with the envelope unpacked, or
/// [`Error::TaskCanceled`]).
pub fn task_outcome(task: Task) -> Result<Json> {
    match task.status {
        TaskStatus::Succeeded => Ok(task.result.unwrap_or_default()),
        TaskStatus::Canceled => Err(Error::TaskCanceled { task_id: task.id }),
        TaskStatus::Failed => {
            let envelope = task.error_envelope().unwrap_or_else(|| {
                ErrorEnvelope::new("Unknown", "unknown", "task failed without an error envelope", false)
            });
            Err(envelope.into_task_failed(task.id))
        }
        TaskStatus::Queued | TaskStatus::Running => {
            Err(Error::validation("task", format!("task {} is {} and has no outcome yet", task.id, task.status)))
        }
    }
}
