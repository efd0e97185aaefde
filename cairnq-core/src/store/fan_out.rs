//! The parameters and answer of a fan-out settle
//! ([`DependencyStore::complete_with_fan_out`](super::DependencyStore::complete_with_fan_out)):
//! a handler's success, its children and the join waiting for them,
//! written in one transaction. Kept apart from the other dependency
//! parameters because a fan-out is a settle (ownership-checked) first.

use crate::model::Task;
use crate::store::{NewTask, SettleParams, SubmitAfterParams};

/// A settle with `complete` semantics that also writes children and a
/// join task waiting for them, all or nothing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FanOutParams {
    /// The settle of the task that fans out (its owner and result).
    pub settle: SettleParams,
    /// The children to insert, in order (key semantics as
    /// [`Store::submit_many`](super::Store::submit_many)).
    pub children: Vec<NewTask>,
    /// The join: its `after` lists only the tasks it waits for besides
    /// the children (usually none); the children's ids, as the inserts
    /// return them, are put first.
    pub join: SubmitAfterParams,
}

impl FanOutParams {
    /// Settles `settle`'s task, inserts `children`, then `join` waiting for
    /// them.
    pub fn new(settle: SettleParams, children: Vec<NewTask>, join: SubmitAfterParams) -> Self {
        Self { settle, children, join }
    }
}

/// What a fan-out wrote.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FanOut {
    /// The settled task: `succeeded`, or `canceled` when a cancel was
    /// pending (then nothing else was written).
    pub task: Task,
    /// The children, in the order given (a key may have returned a task
    /// submitted before).
    pub children: Vec<Task>,
    /// The join task; `None` when the settle ended the task canceled.
    pub join: Option<Task>,
}

impl FanOut {
    /// What a fan-out wrote: the settled row, its children and its join.
    pub fn new(task: Task, children: Vec<Task>, join: Option<Task>) -> Self {
        Self { task, children, join }
    }
}
