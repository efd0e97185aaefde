//! The seam of task dependencies (extension `ext_0008_task_dependencies`):
//! a capability a store hands out ([`Store::dependency_store`](super::Store::dependency_store)),
//! so a store without dependencies implements nothing for them, and its
//! parameters.

use async_trait::async_trait;

use crate::dependencies::{DependencyFailure, TaskWait};
use crate::error::{Error, Result};
use crate::model::Task;
use crate::store::{FanOut, FanOutParams, NewTask, TaskRow};

/// A submit of a task that waits for others (see
/// [`SubmitOptions::after`](crate::SubmitOptions::after)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubmitAfterParams {
    /// The task to insert (key semantics as [`Store::submit`](super::Store::submit)).
    pub task: NewTask,
    /// The ids it waits for: at least one, distinct, in the caller's order.
    pub after: Vec<String>,
    /// What a dependency ending failed or canceled does to it.
    pub on_failure: DependencyFailure,
}

impl SubmitAfterParams {
    /// `task` waiting for `after`, canceled if one of them fails.
    pub fn new(task: NewTask, after: Vec<String>) -> Self {
        Self { task, after, on_failure: DependencyFailure::Cancel }
    }

    /// Sets the failure policy.
    pub fn on_failure(mut self, on_failure: DependencyFailure) -> Self {
        self.on_failure = on_failure;
        self
    }
}

/// Which task's dependencies to read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DependenciesParams {
    /// The dependent task.
    pub task_id: String,
}

impl DependenciesParams {
    /// The dependencies of `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into() }
    }
}

/// Which tasks' waits to read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskWaitsParams {
    /// The tasks; those submitted without dependencies have no wait.
    pub task_ids: Vec<String>,
}

impl TaskWaitsParams {
    /// The waits of these tasks.
    pub fn new(task_ids: Vec<String>) -> Self {
        Self { task_ids }
    }
}

/// Task dependencies, for a store that keeps them.
///
/// The contract (held by the conformance suite): a task submitted after
/// others is not claimable while one of them has not ended; when the last
/// one ends, in the transaction that settles it, it becomes due (never
/// before its own delay); with [`DependencyFailure::Cancel`] a dependency
/// ending failed or canceled cancels it at once (and, transitively, every
/// task waiting for it with that policy) with the envelope of
/// [`dependency_failed`](crate::dependency_failed). Each dependency counts
/// once, however often it is retried and ends again.
#[async_trait]
pub trait DependencyStore: Send + Sync {
    /// Inserts `params.task` waiting for `params.after`, in one
    /// transaction. An id that names no task is a
    /// [`Error::Validation`](crate::Error::Validation) and nothing is
    /// written. Dependencies already ended count at once: with none left
    /// the task is due as a plain submit would be; one already failed or
    /// canceled under [`DependencyFailure::Cancel`] cancels it at once. A
    /// key that returns an existing task returns it unchanged.
    async fn submit_after(&self, params: &SubmitAfterParams) -> Result<Task>;

    /// The dependency rows of a task, whole, in the order its submit named
    /// them (a purged dependency is gone from the list); empty for a task
    /// without dependencies.
    async fn dependencies(&self, params: &DependenciesParams) -> Result<Vec<TaskRow>>;

    /// The waits of the tasks asked that have one, in no particular order.
    async fn task_waits(&self, params: &TaskWaitsParams) -> Result<Vec<TaskWait>>;

    /// Fan-out: in ONE transaction, settles `params.settle`'s task as
    /// [`Store::complete`](super::Store::complete) would (ownership-checked:
    /// [`Error::LostLease`] and nothing written once the lease is gone),
    /// then, unless a pending cancel ended it canceled, inserts
    /// `params.children` as [`Store::submit_many`](super::Store::submit_many)
    /// would and `params.join` as [`submit_after`](Self::submit_after) would,
    /// waiting for every child (their ids first, then `params.join.after`).
    /// With no child and nothing else to wait for, the join is a plain
    /// submit. Any error writes nothing.
    ///
    /// The default answers [`Error::UnsupportedBackend`], so a store
    /// written before fan-out keeps compiling.
    async fn complete_with_fan_out(&self, params: &FanOutParams) -> Result<FanOut> {
        let _ = params;
        Err(Error::UnsupportedBackend { operation: "fan_out", backend: "this" })
    }
}
