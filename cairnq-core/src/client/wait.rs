//! Waiting: how `wait` and `call` poll, the wait loop itself, and turning a
//! terminal task into its outcome.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::{CairnQ, SubmitOptions, TaskSpec, by_id, by_key};
use crate::envelope::ErrorEnvelope;
use crate::error::{Error, Result};
use crate::json::Json;
use crate::model::{Task, TaskStatus};
use crate::store::{GetParams, TaskSelector, Wake};

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

impl CairnQ {
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
            TaskSelector::Key(_) => match self.store.get_status(&GetParams::new(selector.clone())).await? {
                Some(found) => TaskSelector::Id(found.id),
                None => return Err(Error::NotFound { task_id: selector.as_str().to_string() }),
            },
        };
        let wake = Wake::TaskDone(by_id.as_str().to_string());
        let by_id = GetParams::new(by_id);
        let mut poll = options.poll;
        loop {
            // Watch first, then read: a finish committed after the read
            // still ends the wait below.
            let watch = self.store.watch_for_change(&wake);
            let status = self
                .store
                .get_status(&by_id)
                .await?
                .ok_or_else(|| Error::NotFound { task_id: by_id.task.as_str().to_string() })?;
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
                ErrorEnvelope::new("unknown", "task failed without an error envelope").error_type("Unknown")
            });
            Err(envelope.into_task_failed(task.id))
        }
        TaskStatus::Queued | TaskStatus::Running => {
            Err(Error::validation("task", format!("task {} is {} and has no outcome yet", task.id, task.status)))
        }
    }
}
