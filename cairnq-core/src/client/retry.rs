//! The retry builder: which task, and whether its attempt count starts
//! over. A builder rather than a boolean argument, so a call site says
//! what it does (`.reset_attempt()`), not `retry(id, true)`.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use crate::client::CairnQ;
use crate::error::Result;
use crate::model::Task;
use crate::store::{RetryParams, TaskSelector};

/// A retry under construction; `.await` it. Requeues a failed or canceled
/// task now (error, worker, lease, cancel flag, progress and message
/// cleared) and answers the row, or `None` when the task is missing or not
/// failed or canceled. The attempt count is kept unless
/// [`reset_attempt`](Self::reset_attempt) is set.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// if let Some(task) = client.retry("task_01J...").reset_attempt().await? {
///     assert_eq!(task.attempt, 0);
/// }
/// # Ok(()) }
/// ```
#[must_use = "a retry does nothing until it is awaited"]
pub struct Retry<'a> {
    client: &'a CairnQ,
    /// The task, or why its id or key was refused (reported on await).
    task: Result<TaskSelector>,
    reset_attempt: bool,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(client: &'a CairnQ, task: Result<TaskSelector>) -> Self {
        Self { client, task, reset_attempt: false }
    }

    /// Starts the attempt count over (the task gets `max_attempts` claims
    /// again).
    pub fn reset_attempt(mut self) -> Self {
        self.reset_attempt = true;
        self
    }
}

impl<'a> IntoFuture for Retry<'a> {
    type Output = Result<Option<Task>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let params = RetryParams::new(self.task?);
            let params = if self.reset_attempt { params.reset_attempt() } else { params };
            self.client.store().retry(&params).await
        })
    }
}
