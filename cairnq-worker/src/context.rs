//! [`TaskContext`]: what a handler knows about its task and what it may do
//! with it — report progress, watch for cancellation or a lost lease,
//! settle early, submit children and wait for other tasks.

use std::future::Future;
use std::sync::Arc;

use cairnq_core::backend::lost_lease;
use cairnq_core::store::{HeartbeatParams, ProgressParams};
use cairnq_core::{CairnQ, Error, Json, Result, Submit, Task, WaitOptions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::settle::Settlement;
use crate::shared::Shared;
use crate::state::TaskState;
use crate::task_error::TaskError;

/// One claimed task as its handler sees it. Cheap to clone; every clone is
/// the same attempt.
///
/// ```no_run
/// use cairnq_worker::{TaskContext, TaskError};
///
/// async fn resize(ctx: TaskContext, width: u32) -> Result<u32, TaskError> {
///     ctx.progress(0.5, Some("halfway")).await?;
///     if ctx.canceled() {
///         return Err(TaskError::new("stopped early").retryable(false));
///     }
///     Ok(width / 2)
/// }
/// ```
#[derive(Clone)]
pub struct TaskContext {
    task: Arc<Task>,
    state: Arc<TaskState>,
    core: Arc<Shared>,
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
        Self { task: Arc::new(task), state, core }
    }

    pub(crate) fn state(&self) -> &Arc<TaskState> {
        &self.state
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
    pub fn attempt(&self) -> i64 {
        self.task.attempt
    }

    /// Claims allowed before a retryable failure becomes final.
    pub fn max_attempts(&self) -> i64 {
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

    /// Records progress (0..1) and an optional message.
    pub async fn progress(&self, value: f64, message: Option<&str>) -> Result<()> {
        let params = ProgressParams::new(&self.task.id, &self.core.worker_id).progress(value);
        let params = match message {
            Some(message) => params.message(message),
            None => params,
        };
        self.owned_write(self.core.client.progress(&params)).await.map(drop)
    }

    /// Extends this task's lease now (the worker's heartbeat loop already
    /// does this; call it before a long stretch of blocking work).
    pub async fn heartbeat(&self) -> Result<()> {
        let params = HeartbeatParams::new(&self.task.id, &self.core.worker_id).lease_ms(self.core.options.lease_ms());
        let row = self.owned_write(self.core.client.heartbeat(&params)).await?;
        if row.cancel_requested_at_ms.is_some() {
            self.state.mark_canceled();
        }
        Ok(())
    }

    /// Whether a cancel was requested (read from the store by the heartbeat;
    /// once true it stays true). Cooperative: stop and return; the worker's
    /// completion then records the task as canceled.
    pub fn canceled(&self) -> bool {
        self.state.is_canceled()
    }

    /// Resolves when a cancel is requested.
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

    /// Fails the attempt now (`retryable`: requeued with backoff while
    /// attempts are left). A second settle is a no-op returning `None`.
    pub async fn fail(&self, reason: impl Into<String>, retryable: bool) -> Result<Option<Task>> {
        self.fail_with(TaskError::new(reason).retryable(retryable)).await
    }

    /// Fails the attempt now with a prepared [`TaskError`].
    pub async fn fail_with(&self, error: TaskError) -> Result<Option<Task>> {
        self.core.settle(&self.task, &self.state, Settlement::Fail(error)).await
    }

    /// Whether the task was settled already (by the handler or the worker).
    pub fn settled(&self) -> bool {
        self.state.is_settled()
    }

    /// Starts a submit of a child task: parent, root and correlation ids are
    /// wired; backpressure applies. Set more options, then `.await` it.
    pub fn submit<P: Serialize + ?Sized>(&self, name: &str, payload: &P) -> Submit<'_> {
        let submit = self.core.client.submit(name, payload).parent_id(&self.task.id).root_id(self.root_id());
        match self.correlation_id() {
            Some(correlation) => submit.correlation_id(correlation),
            None => submit,
        }
    }

    /// Waits for another task to finish (see [`CairnQ::wait`]).
    pub async fn wait(&self, task_id: &str, options: &WaitOptions) -> Result<Task> {
        self.core.client.wait(task_id, options).await
    }

    /// Runs a future to completion from a blocking handler's thread (for
    /// example `ctx.block_on(ctx.progress(0.5, None))`). Only call it from
    /// handlers registered with `task_blocking`.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        tokio::runtime::Handle::current().block_on(future)
    }

    /// An ownership-checked write; a lost lease is remembered.
    async fn owned_write(&self, write: impl Future<Output = Result<Task>>) -> Result<Task> {
        if self.state.is_lost() {
            return Err(lost_lease(&self.task.id, &self.core.worker_id));
        }
        let written = write.await;
        if matches!(written, Err(Error::LostLease { .. })) {
            self.core.lease_lost(&self.task.id, &self.state);
        }
        written
    }
}
