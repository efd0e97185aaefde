//! Parameters of the durable-steps extension ([`StepStore`](super::StepStore)):
//! read a task's steps, and store one step under the attempt's lease.

use crate::json::Json;

/// A task's stored steps ([`StepStore::steps`](super::StepStore::steps)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepsParams {
    /// The task.
    pub task_id: String,
}

impl StepsParams {
    /// The steps of `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into() }
    }
}

/// Store one step ([`StepStore::save_step`](super::StepStore::save_step)),
/// ownership-checked like every worker write: the task must be running,
/// held by `worker_id`, with its lease not yet ended, and in `attempt`.
/// Exactly one of `result` and `error` is set.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SaveStepParams {
    /// The task.
    pub task_id: String,
    /// The worker holding its lease.
    pub worker_id: String,
    /// The attempt storing the step (the task's `attempt` now).
    pub attempt: u32,
    /// The step's stored name (already numbered).
    pub name: String,
    /// What the step returned, when it did.
    pub result: Option<Json>,
    /// The error envelope of a permanent failure (a JSON object), when it failed.
    pub error: Option<Json>,
}

impl SaveStepParams {
    /// A step of `task_id` held by `worker_id`: attempt 0, no name, and a
    /// `null` result until set.
    pub fn new(task_id: impl Into<String>, worker_id: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            worker_id: worker_id.into(),
            attempt: 0,
            name: String::new(),
            result: Some(Json::null()),
            error: None,
        }
    }

    /// Stored by this attempt.
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// Under this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The step returned `result`.
    pub fn result(mut self, result: impl Into<Json>) -> Self {
        (self.result, self.error) = (Some(result.into()), None);
        self
    }

    /// The step failed for good with this error envelope.
    pub fn error(mut self, envelope: impl Into<Json>) -> Self {
        (self.result, self.error) = (None, Some(envelope.into()));
        self
    }
}
