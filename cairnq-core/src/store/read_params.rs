//! Parameters of the seam's reads beyond PROTOCOL.md's operations: what an
//! operator's view (the dashboard) asks of a store of any size, each a
//! bounded read: how many tasks a list filter matches, the tasks one task
//! submitted, and the business key pointing at a task.

use crate::store::ListFilter;

/// Count the tasks a list filter matches, up to a bound
/// ([`Store::count_tasks`](crate::Store::count_tasks)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CountTasksParams {
    /// What to count: its status, queue, name, root, correlation, created
    /// range and cursor (`after`) filter; its limit and offset are not used.
    pub filter: ListFilter,
    /// Only tasks created at or after this time (epoch ms), on top of the
    /// filter's own [`created_since_ms`](ListFilter::created_since_ms) (the
    /// later of the two applies).
    pub since_ms: Option<i64>,
    /// Count at most this many (a bounded read).
    pub at_most: u64,
}

impl CountTasksParams {
    /// Count what `filter` matches, at most `at_most`.
    pub fn new(filter: ListFilter, at_most: u64) -> Self {
        Self { filter, since_ms: None, at_most }
    }

    /// Only tasks created at or after `since_ms` (epoch ms).
    pub fn since_ms(mut self, since_ms: i64) -> Self {
        self.since_ms = Some(since_ms);
        self
    }
}

/// The tasks one task submitted ([`Store::children`](crate::Store::children)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildrenParams {
    /// The parent.
    pub task_id: String,
    /// At most this many children (default 100).
    pub limit: u32,
}

impl ChildrenParams {
    /// The children of `task_id`, at most 100.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into(), limit: 100 }
    }

    /// At most `limit` children.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }
}

/// The business key of one task ([`Store::task_key`](crate::Store::task_key)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskKeyParams {
    /// The task.
    pub task_id: String,
}

impl TaskKeyParams {
    /// The key pointing at `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into() }
    }
}
