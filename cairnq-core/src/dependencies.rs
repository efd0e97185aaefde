//! Task dependencies (extension `ext_0008_task_dependencies`): what a task
//! submitted `after` others is while it waits, and the rule for a
//! dependency that fails. The database is the only coordinator: a waiting
//! task is an ordinary queued row due at [`WAITING_RUN_AT_MS`], so no
//! SDK's worker claims it, and a trigger on the tasks table releases (or
//! cancels) it in the transaction that settles its last dependency,
//! whichever SDK settles it. This module holds what every backend shares
//! about it; the SQL is in the migration, and `MemoryStore` runs the same
//! rules on its collections.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::envelope::ErrorEnvelope;
use crate::model::{Task, TaskStatus};

/// The `run_at_ms` of a task that waits for its dependencies:
/// 9999-12-31T23:59:59.999Z, later than any clock a store reads, and a
/// time every SDK can show. The migration's trigger holds the same number.
pub const WAITING_RUN_AT_MS: i64 = 253_402_300_799_999;

/// The `code` of the envelope a task canceled because of a dependency carries.
pub const DEPENDENCY_FAILED: &str = "dependency_failed";

/// What happens to a waiting task when one of its dependencies ends failed
/// or canceled.
///
/// ```
/// use cairnq_core::DependencyFailure;
/// assert_eq!(DependencyFailure::default(), DependencyFailure::Cancel);
/// assert_eq!("run".parse::<DependencyFailure>(), Ok(DependencyFailure::Run));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DependencyFailure {
    /// The waiting task is canceled at once (and so are the tasks waiting
    /// for it with this policy), with an error envelope of code
    /// [`DEPENDENCY_FAILED`] naming the dependency and how it ended.
    #[default]
    Cancel,
    /// The waiting task runs when every dependency has ended, however they
    /// ended; its handler sees each one's status in `ctx.dependencies()`.
    Run,
}

impl DependencyFailure {
    /// How the policy is stored: `cancel` or `run`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Run => "run",
        }
    }
}

impl fmt::Display for DependencyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy name that is neither `cancel` nor `run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDependencyFailure(pub String);

impl fmt::Display for UnknownDependencyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown dependency failure policy {:?} (expected cancel or run)", self.0)
    }
}

impl std::error::Error for UnknownDependencyFailure {}

impl FromStr for DependencyFailure {
    type Err = UnknownDependencyFailure;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cancel" => Ok(Self::Cancel),
            "run" => Ok(Self::Run),
            other => Err(UnknownDependencyFailure(other.to_string())),
        }
    }
}

/// How far a task submitted with dependencies is along its wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskWait {
    /// The waiting (or once waiting) task.
    pub task_id: String,
    /// How many dependencies it was submitted with.
    pub total: u32,
    /// How many of them have not ended yet.
    pub remaining: u32,
    /// Its policy for a dependency that fails.
    pub on_failure: DependencyFailure,
    /// Whether it still waits (queued and not yet released).
    pub waiting: bool,
}

impl TaskWait {
    /// A wait as a store read it (for backends that build it field by field).
    pub fn new(
        task_id: impl Into<String>,
        total: u32,
        remaining: u32,
        on_failure: DependencyFailure,
        waiting: bool,
    ) -> Self {
        Self { task_id: task_id.into(), total, remaining, on_failure, waiting }
    }

    /// "waiting for 2 of 3 tasks", or `None` once the task no longer waits.
    ///
    /// ```
    /// # use cairnq_core::TaskWait;
    /// let wait: TaskWait = serde_json::from_value(serde_json::json!(
    ///     {"task_id": "t", "total": 3, "remaining": 2, "on_failure": "cancel", "waiting": true})).unwrap();
    /// assert_eq!(wait.describe().as_deref(), Some("waiting for 2 of 3 tasks"));
    /// ```
    pub fn describe(&self) -> Option<String> {
        let noun = if self.total == 1 { "task" } else { "tasks" };
        self.waiting.then(|| format!("waiting for {} of {} {noun}", self.remaining, self.total))
    }
}

/// Whether a task is held back by its dependencies, read from its row alone.
pub fn is_waiting(task: &Task) -> bool {
    task.status == TaskStatus::Queued && task.run_at_ms == WAITING_RUN_AT_MS
}

/// The envelope of a task canceled because `dependency` (id and name) ended
/// with `status`: the same object the migration's trigger writes.
pub fn dependency_failed(dependency_id: &str, dependency_name: &str, status: TaskStatus) -> ErrorEnvelope {
    let message = format!("dependency {dependency_id} ({dependency_name}) ended {}", status.as_str());
    let details = json!({
        "dependency_id": dependency_id,
        "dependency_name": dependency_name,
        "dependency_status": status.as_str(),
    });
    ErrorEnvelope::new(DEPENDENCY_FAILED, message).error_type("DependencyFailed").with_details(details)
}
