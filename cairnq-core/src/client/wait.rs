//! Waiting: how `wait` and `call` poll, the wait loop itself, and turning a
//! terminal task into its outcome.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::diagnosis::{diagnose, limit_hold};
use crate::client::{CairnQ, Call, by_id, by_key};
use crate::envelope::ErrorEnvelope;
use crate::error::{Error, Result};
use crate::json::Json;
use crate::model::{Task, TaskStatus};
use crate::store::{GetParams, TaskSelector, Wake};

/// How `wait` and `call` wait: `get_status` every `poll`, growing 1.5x up to
/// `max_poll` (a push wakeup cuts a sleep short), until `timeout`. Defaults:
/// 30 s, 100 ms, 500 ms.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::WaitOptions;
/// let wait = WaitOptions::new().timeout(Duration::from_secs(5));
/// assert_eq!(wait.timeout, Duration::from_secs(5));
/// ```
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
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives up after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Polls first after `poll`, growing to at most `max_poll`.
    pub fn polling(mut self, poll: Duration, max_poll: Duration) -> Self {
        self.poll = poll;
        self.max_poll = max_poll.max(poll);
        self
    }
}

impl CairnQ {
    /// Waits until the task is terminal and returns its row, whatever the
    /// outcome (use [`task_outcome`] to turn failure into an error). A task
    /// not visible yet (submitted elsewhere a moment ago) is waited for too.
    /// On timeout: [`Error::TaskTimeout`] with the last snapshot and a
    /// diagnosis; the task keeps running.
    pub async fn wait(&self, task_id: &str, options: &WaitOptions) -> Result<Task> {
        self.wait_selected(by_id(task_id)?, options).await
    }

    /// [`wait`](Self::wait) for the task a key points at, resolved again
    /// on every poll: a `replace` moves the wait onto the new task, and a
    /// key that has no task yet is waited for until the timeout.
    pub async fn wait_by_key(&self, key: &str, options: &WaitOptions) -> Result<Task> {
        self.wait_selected(by_key(key)?, options).await
    }

    async fn wait_selected(&self, selector: TaskSelector, options: &WaitOptions) -> Result<Task> {
        let deadline = Instant::now() + options.timeout;
        let params = GetParams::new(selector);
        let mut poll = options.poll;
        let mut current: Option<String> = match &params.task {
            TaskSelector::Id(id) => Some(id.clone()),
            _ => None,
        };
        loop {
            // Watch first, then read: a finish committed after the read
            // still ends the sleep below.
            let watched = current.clone();
            let watch = watched.as_ref().map(|id| self.store().notifications().watch(&Wake::TaskDone(id.clone())));
            if let Some(status) = self.store().get_status(&params).await? {
                if status.status.is_terminal()
                    && let Some(task) = self.store().get(&GetParams::new(TaskSelector::Id(status.id.clone()))).await?
                    && task.status.is_terminal()
                {
                    return Ok(task);
                }
                current = Some(status.id);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out(&params.task, current, options).await);
            }
            if current != watched {
                // The key led to a task this pass did not watch: watch it
                // and read again before sleeping (once per task the key
                // names, so never a busy loop).
                continue;
            }
            let sleep = poll.min(deadline - now);
            match watch {
                Some(watch) => drop(tokio::time::timeout(sleep, watch).await),
                None => tokio::time::sleep(sleep).await,
            }
            poll = poll.mul_f64(1.5).min(options.max_poll.max(options.poll));
        }
    }

    /// The timeout error: the last snapshot (read now) and its diagnosis.
    async fn timed_out(&self, selector: &TaskSelector, current: Option<String>, options: &WaitOptions) -> Error {
        let last_seen = match &current {
            Some(id) => self.store().get(&GetParams::new(TaskSelector::Id(id.clone()))).await.ok().flatten(),
            None => None,
        };
        let key = match selector {
            TaskSelector::Key(key) => Some(key.clone()),
            _ => None,
        };
        let task_id = match selector {
            TaskSelector::Id(id) => Some(id.clone()),
            _ => current,
        };
        let hold = match &last_seen {
            Some(task) => limit_hold(self, task).await,
            None => None,
        };
        Error::TaskTimeout {
            task_id,
            diagnosis: diagnose(last_seen.as_ref(), key.is_some(), hold),
            key,
            timeout: options.timeout,
            last_seen: last_seen.map(Box::new),
        }
    }

    /// Submits and waits for the result: set options and the timeout on
    /// the returned [`Call`], then `.await` it (see [`Submit::call`](crate::Submit::call)).
    pub fn call<P: Serialize + ?Sized>(&self, name: &str, payload: &P) -> Call<'_> {
        Call::new(self.submit(name, payload))
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
