//! [`TaskContext`]: what a handler knows about its task and what it may do
//! with it — report progress, watch for cancellation or a lost lease,
//! settle early, submit children and wait for other tasks.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::backend::lost_lease;
use cairnq_core::{CairnQ, Error, Json, Result, Submit, Task, TaskDef, TaskStatus, WaitOptions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::settle::Settlement;
use crate::shared::Shared;
use crate::state::TaskState;
use crate::step_memo::StepMemo;
use crate::task_error::TaskError;

/// How old the heartbeat's answer about a cancel may be before
/// [`TaskContext::canceled`] asks the store itself.
const CANCEL_FRESHNESS: Duration = Duration::from_secs(1);

/// One claimed task as its handler sees it. Cheap to clone; every clone is
/// the same attempt.
///
/// ```no_run
/// use cairnq_worker::{TaskContext, TaskError};
///
/// async fn resize(ctx: TaskContext, width: u32) -> Result<u32, TaskError> {
///     ctx.progress(0.5).message("halfway").await?;
///     if ctx.canceled().await {
///         return Err(TaskError::new("stopped early"));
///     }
///     ctx.message("writing the file").await?;
///     Ok(width / 2)
/// }
/// ```
#[derive(Clone)]
pub struct TaskContext {
    task: Arc<Task>,
    state: Arc<TaskState>,
    core: Arc<Shared>,
    /// This attempt's durable steps: the names used so far, and the steps
    /// earlier attempts stored (read once, at the first step).
    steps: Arc<StepMemo>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task.id)
            .field("name", &self.task.name)
            .field("attempt", &self.task.attempt)
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    pub(crate) fn new(task: Task, state: Arc<TaskState>, core: Arc<Shared>) -> Self {
        Self { task: Arc::new(task), state, core, steps: Arc::default() }
    }

    pub(crate) fn steps(&self) -> &StepMemo {
        &self.steps
    }

    pub(crate) fn state(&self) -> &Arc<TaskState> {
        &self.state
    }

    pub(crate) fn core(&self) -> &Arc<Shared> {
        &self.core
    }

    /// The worker's ceiling on one attempt.
    #[cfg(all(feature = "exec", unix))]
    pub(crate) fn max_run(&self) -> Option<Duration> {
        self.core.options.max_run
    }

    /// The task row as claimed.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task.id
    }

    /// The handler name.
    pub fn name(&self) -> &str {
        &self.task.name
    }

    /// The queue.
    pub fn queue(&self) -> &str {
        &self.task.queue
    }

    /// This attempt's number (1 on the first claim).
    pub fn attempt(&self) -> u32 {
        self.task.attempt
    }

    /// Claims allowed before a retryable failure becomes final.
    pub fn max_attempts(&self) -> u32 {
        self.task.max_attempts
    }

    /// The payload decoded into `P`.
    pub fn payload<P: DeserializeOwned>(&self) -> Result<P> {
        Ok(self.task.payload_as()?)
    }

    /// The payload as JSON.
    pub fn payload_json(&self) -> &Json {
        &self.task.payload
    }

    /// The caller's metadata object.
    pub fn metadata(&self) -> &Json {
        &self.task.metadata
    }

    /// The chain's first task.
    pub fn root_id(&self) -> &str {
        self.task.root_id.as_deref().unwrap_or(&self.task.id)
    }

    /// The task that submitted this one.
    pub fn parent_id(&self) -> Option<&str> {
        self.task.parent_id.as_deref()
    }

    /// The correlation id.
    pub fn correlation_id(&self) -> Option<&str> {
        self.task.correlation_id.as_deref()
    }

    /// The worker running this attempt.
    pub fn worker_id(&self) -> &str {
        &self.core.worker_id
    }

    /// The client (with the worker's backpressure gate, if any).
    pub fn client(&self) -> &CairnQ {
        &self.core.client
    }

    /// Starts a progress report of `value` (0..1); add a
    /// [`message`](Progress::message), then `.await` it.
    pub fn progress(&self, value: f64) -> Progress<'_> {
        Progress { ctx: self, fraction: Some(value), message: None }
    }

    /// Starts a progress report of a message only: the progress value stays
    /// what it was. `.await` it.
    pub fn message(&self, message: impl Into<String>) -> Progress<'_> {
        Progress { ctx: self, fraction: None, message: Some(message.into()) }
    }

    /// Extends this task's lease now (the worker's heartbeat loop already
    /// does this; call it before a long stretch of blocking work).
    pub async fn heartbeat(&self) -> Result<()> {
        self.owned_write(self.core.session.heartbeat(&self.task.id)).await.map(drop)
    }

    /// Whether a cancel was requested; once true it stays true.
    /// Cooperative: stop and return, and the worker's completion records
    /// the task as canceled.
    ///
    /// Free while the heartbeat has answered within the last second (it
    /// reads the flag with every renewal); otherwise it reads the task's row,
    /// so a cancel is seen within a second however long the lease. A row
    /// that is gone counts as canceled; a store error answers what was last
    /// known (the heartbeat keeps watching).
    pub async fn canceled(&self) -> bool {
        if self.state.is_canceled() {
            return true;
        }
        if self.state.since_cancel_checked() < CANCEL_FRESHNESS {
            return false;
        }
        match self.core.client.get(&self.task.id).await {
            Ok(Some(row)) if row.cancel_requested_at_ms.is_none() && row.status != TaskStatus::Canceled => {
                self.state.cancel_checked();
            }
            Ok(_) => self.state.mark_canceled(),
            Err(_) => {}
        }
        self.state.is_canceled()
    }

    /// Resolves when this attempt learns that a cancel was requested: from
    /// the heartbeat, from [`canceled`](Self::canceled), or from the row any
    /// write of the attempt returns ([`progress`](Self::progress),
    /// [`message`](Self::message), [`heartbeat`](Self::heartbeat)). A
    /// handler that reports progress while it waits on this hears of a
    /// cancel at its next report.
    pub fn on_cancel(&self) -> impl Future<Output = ()> + Send + 'static {
        let state = self.state.clone();
        async move { state.cancel_signal().await }
    }

    /// Whether this worker lost the task's lease: another worker may run it
    /// now, and whatever this attempt returns is discarded.
    pub fn lost_lease(&self) -> bool {
        self.state.is_lost()
    }

    /// Resolves when the lease is lost (or the attempt was abandoned at
    /// `max_run`); select on it to stop work nobody will keep.
    pub fn on_lost_lease(&self) -> impl Future<Output = ()> + Send + 'static {
        let state = self.state.clone();
        async move { state.lost_signal().await }
    }

    /// Settles the task now as succeeded (canceled if a cancel is pending);
    /// the handler's later return value is then ignored. A second settle is
    /// a no-op returning `None`.
    pub async fn succeed<R: Serialize + ?Sized>(&self, result: &R) -> Result<Option<Task>> {
        let value = Json::encode(result)?;
        self.core.settle(&self.task, &self.state, Settlement::Complete(value)).await
    }

    /// Fails the attempt now for `reason`, the way a handler's `?` error
    /// would: retryable (queued again after the worker's backoff while
    /// attempts are left; code `task_error`). This is the other SDKs'
    /// `ctx.fail(reason)` default. A second settle is a no-op returning
    /// `None`.
    pub async fn fail(&self, reason: impl Into<String>) -> Result<Option<Task>> {
        self.fail_with(TaskError::retryable(reason)).await
    }

    /// Fails the attempt now with `error`: a [`TaskError`] (permanent from
    /// [`TaskError::new`], retryable from [`TaskError::retryable`], or a
    /// ready envelope through [`TaskError::from_envelope`]) or any
    /// `std::error::Error` (retryable `handler_error`).
    ///
    /// ```no_run
    /// # async fn demo(ctx: cairnq_worker::TaskContext) -> cairnq_core::Result<()> {
    /// use cairnq_worker::TaskError;
    /// ctx.fail_with(TaskError::new("no source records").code("empty_input")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn fail_with(&self, error: impl Into<TaskError>) -> Result<Option<Task>> {
        self.core.settle(&self.task, &self.state, Settlement::Fail(error.into())).await
    }

    /// Fails the attempt now as the worker settles a call's outcome: a
    /// store failure is reported, never returned.
    pub(crate) async fn fail_reported(&self, error: TaskError) {
        self.core.settle_outcome(&self.task, &self.state, Settlement::Fail(error)).await;
    }

    /// Whether the task was settled already (by the handler or the worker).
    pub fn settled(&self) -> bool {
        self.state.is_settled()
    }

    /// Starts a submit of a child task of kind `def`: parent, root and
    /// correlation ids are wired; backpressure applies. Set more options,
    /// then `.await` it (or `.call(timeout)` for its typed result). Refused
    /// with `LostLease`, writing nothing, once the lease is known lost.
    ///
    /// ```no_run
    /// # async fn demo(ctx: cairnq_worker::TaskContext) -> cairnq_core::Result<()> {
    /// use cairnq_core::TaskDef;
    /// const THUMBNAIL: TaskDef<String, String> = TaskDef::new("thumbnail");
    /// let child = ctx.submit(THUMBNAIL, &"a.png".to_string()).queue("images").await?;
    /// assert_eq!(child.parent_id.as_deref(), Some(ctx.task_id()));
    /// # Ok(()) }
    /// ```
    pub fn submit<P: Serialize, R: DeserializeOwned>(&self, def: TaskDef<P, R>, payload: &P) -> Submit<'_, R> {
        self.wire_child(def.submit(&self.core.client, payload))
    }

    /// [`submit`](Self::submit) by name, for a payload and result the
    /// handler handles as JSON.
    pub fn submit_named<P: Serialize + ?Sized>(&self, name: &str, payload: &P) -> Submit<'_> {
        self.wire_child(self.core.client.submit(name, payload))
    }

    /// Parent, root and correlation ids, and the lease check: a context
    /// whose lease is lost is an attempt another worker retries, and every
    /// child it made now would be made again by that retry, so the submit
    /// is refused with `LostLease` when awaited (as the Python SDK refuses
    /// it). A settled task may still submit children.
    fn wire_child<'a, R>(&'a self, submit: Submit<'a, R>) -> Submit<'a, R> {
        submit.child_of(&self.task).precondition(|| self.require_lease())
    }

    /// Waits for another task to finish (see [`CairnQ::wait`]).
    pub async fn wait(&self, task_id: &str, options: &WaitOptions) -> Result<Task> {
        self.core.client.wait(task_id, options).await
    }

    /// Runs a future to completion from a blocking handler's thread (for
    /// example `ctx.block_on(ctx.progress(0.5).into_future())`). Only call
    /// it from handlers registered with `blocking_task`.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        tokio::runtime::Handle::current().block_on(future)
    }

    /// `LostLease` once this context's lease is known lost.
    fn require_lease(&self) -> Result<()> {
        if self.state.is_lost() { Err(lost_lease(&self.task.id, &self.core.worker_id)) } else { Ok(()) }
    }

    /// An ownership-checked write; a lost lease is remembered, and the row
    /// it returns answers the cancel question: a handler that reports
    /// progress while it awaits [`on_cancel`](Self::on_cancel) hears of a
    /// cancel at its next report, not at the next heartbeat (which may be
    /// a third of a long lease away).
    async fn owned_write(&self, write: impl Future<Output = Result<Task>>) -> Result<Task> {
        self.require_lease()?;
        let written = write.await;
        match &written {
            Ok(row) if row.cancel_requested_at_ms.is_some() => self.state.mark_canceled(),
            Ok(_) => self.state.cancel_checked(),
            Err(Error::LostLease { .. }) => self.core.lease_lost(&self.state),
            Err(_) => {}
        }
        written
    }
}

/// A progress report under construction ([`TaskContext::progress`],
/// [`TaskContext::message`]); `.await` it. Refused with `LostLease` once
/// the lease is lost.
#[must_use = "a progress report does nothing until it is awaited"]
pub struct Progress<'a> {
    ctx: &'a TaskContext,
    fraction: Option<f64>,
    message: Option<String>,
}

impl Progress<'_> {
    /// With this message too.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

impl<'a> IntoFuture for Progress<'a> {
    type Output = Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let ctx = self.ctx;
            let progress = ctx.core.session.progress(&ctx.task.id, self.fraction, self.message.as_deref());
            ctx.owned_write(progress).await.map(drop)
        })
    }
}
