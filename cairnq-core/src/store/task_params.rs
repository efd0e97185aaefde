//! The parameters of the seam's task operations: submitting, reading,
//! cancelling, retrying, purging and repairing. Each is `#[non_exhaustive]`
//! with a constructor for what it requires and setters for the rest, so it
//! can grow fields without breaking a backend or a caller.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result, require_non_negative, require_positive, require_text};
use crate::json::Json;
use crate::keys::Conflict;
use crate::model::{ListCursor, Task, TaskStatus};

/// Picks a task by id or by business key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSelector {
    /// The task with this id.
    Id(String),
    /// The task the key currently points at.
    Key(String),
}

impl TaskSelector {
    /// The id or key, for messages.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Id(s) | Self::Key(s) => s,
        }
    }
}

/// A validated task to insert. Built by the client (see
/// [`SubmitOptions`](crate::SubmitOptions)); the id and root id are already
/// resolved.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewTask {
    /// The new row's id (used only if a row is inserted).
    pub id: String,
    /// Handler name (non-empty).
    pub name: String,
    /// Queue name (non-empty).
    pub queue: String,
    /// The payload.
    pub payload: Json,
    /// A JSON object.
    pub metadata: Json,
    /// At least 1.
    pub max_attempts: i32,
    /// Higher runs first.
    pub priority: i32,
    /// Not claimable for this long (>= 0).
    pub delay_ms: i64,
    /// The submitting task, if any.
    pub parent_id: Option<String>,
    /// The chain's first task (the new id for a top-level task).
    pub root_id: String,
    /// Caller-chosen correlation.
    pub correlation_id: Option<String>,
    /// Business key; `None` means a plain insert.
    pub key: Option<String>,
    /// What to do when the key already points at a task.
    pub conflict: Conflict,
}

impl NewTask {
    /// The row inserting this task at `now_ms` writes, the columns the
    /// insert leaves to their defaults included: for a backend whose insert
    /// returns nothing.
    pub fn inserted_row(&self, now_ms: i64) -> Task {
        Task {
            id: self.id.clone(),
            name: self.name.clone(),
            queue: self.queue.clone(),
            status: TaskStatus::Queued,
            payload: self.payload.clone(),
            result: None,
            error: None,
            metadata: self.metadata.clone(),
            progress: None,
            message: None,
            attempt: 0,
            // Submit validated it as at least 1.
            max_attempts: u32::try_from(self.max_attempts).unwrap_or(0),
            priority: self.priority,
            worker_id: None,
            lease_until_ms: None,
            run_at_ms: now_ms.saturating_add(self.delay_ms),
            cancel_requested_at_ms: None,
            parent_id: self.parent_id.clone(),
            root_id: Some(self.root_id.clone()),
            correlation_id: self.correlation_id.clone(),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            completed_at_ms: None,
        }
    }
}

/// Submit several tasks in one transaction ([`Store::submit_many`](crate::Store::submit_many)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubmitManyParams {
    /// The tasks, in order.
    pub tasks: Vec<NewTask>,
}

impl SubmitManyParams {
    /// Submit these tasks.
    pub fn new(tasks: Vec<NewTask>) -> Self {
        Self { tasks }
    }
}

/// Read one task ([`Store::get`](crate::Store::get),
/// [`Store::get_status`](crate::Store::get_status)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetParams {
    /// Which task.
    pub task: TaskSelector,
}

impl GetParams {
    /// Read the selected task.
    pub fn new(task: TaskSelector) -> Self {
        Self { task }
    }
}

/// Cancel one task ([`Store::cancel`](crate::Store::cancel)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CancelParams {
    /// Which task.
    pub task: TaskSelector,
}

impl CancelParams {
    /// Cancel the selected task.
    pub fn new(task: TaskSelector) -> Self {
        Self { task }
    }
}

/// Requeue a failed or canceled task ([`Store::retry`](crate::Store::retry)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryParams {
    /// Which task.
    pub task: TaskSelector,
    /// Start counting attempts from 0 again (else the count goes on).
    pub reset_attempt: bool,
}

impl RetryParams {
    /// Retry the selected task, keeping its attempt count.
    pub fn new(task: TaskSelector) -> Self {
        Self { task, reset_attempt: false }
    }

    /// Resets the attempt count to 0.
    pub fn reset_attempt(mut self) -> Self {
        self.reset_attempt = true;
        self
    }
}

/// Count tasks by queue and status ([`Store::stats`](crate::Store::stats)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatsParams {
    /// Only this queue (`None`: every queue).
    pub queue: Option<String>,
}

impl StatsParams {
    /// Every queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only this queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }
}

/// Count the queued tasks of one queue, up to a bound
/// ([`Store::count_queued`](crate::Store::count_queued)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CountQueuedParams {
    /// The queue.
    pub queue: String,
    /// Count at most this many rows (a bounded read).
    pub at_most: u64,
}

impl CountQueuedParams {
    /// Count queued rows on `queue`, at most `at_most`.
    pub fn new(queue: impl Into<String>, at_most: u64) -> Self {
        Self { queue: queue.into(), at_most }
    }
}

/// Filters of [`Store::list`](crate::Store::list) (and [`CairnQ::list`](crate::CairnQ::list)); `None` filters are left
/// out of the SQL. `Default`: no filter, limit 100, offset 0.
///
/// Page with [`after`](Self::after) (keyset: each page costs the same
/// however deep) rather than an offset, which re-reads every row it skips.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// use cairnq_core::{ListFilter, TaskStatus};
/// let mut filter = ListFilter::new().status(TaskStatus::Failed).limit(500);
/// loop {
///     let page = client.list(&filter).await?;
///     for task in &page.tasks { println!("{}", task.id); }
///     match page.next {
///         Some(cursor) => filter = filter.after(cursor),
///         None => break,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only this status.
    pub status: Option<TaskStatus>,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this handler name.
    pub name: Option<String>,
    /// Only this chain.
    pub root_id: Option<String>,
    /// Only this correlation id.
    pub correlation_id: Option<String>,
    /// Only the task this business key points at (a key names at most one
    /// task). [`CairnQ::list`](crate::CairnQ::list) reads it by key and
    /// checks the other filters on the row itself, so a [`Store::list`](crate::Store::list) is never
    /// given a key filter.
    pub key: Option<String>,
    /// Only rows created at or after this time (epoch ms; the seam's unit,
    /// set through [`created_since`](Self::created_since)).
    pub created_since_ms: Option<i64>,
    /// Only rows created at or before this time (epoch ms, set through
    /// [`created_until`](Self::created_until)).
    pub created_until_ms: Option<i64>,
    /// At most this many rows (>= 0).
    pub limit: i64,
    /// Skip this many rows (>= 0).
    pub offset: i64,
    /// Only rows after this one in list order (keyset paging).
    pub after: Option<ListCursor>,
}

impl Default for ListFilter {
    fn default() -> Self {
        Self {
            status: None,
            queue: None,
            name: None,
            root_id: None,
            correlation_id: None,
            key: None,
            created_since_ms: None,
            created_until_ms: None,
            limit: 100,
            offset: 0,
            after: None,
        }
    }
}

impl ListFilter {
    /// No filter.
    pub fn new() -> Self {
        Self::default()
    }
    /// Only this status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// Only this queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }
    /// Only this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Only this root id.
    pub fn root_id(mut self, id: impl Into<String>) -> Self {
        self.root_id = Some(id.into());
        self
    }
    /// Only this correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }
    /// Only the task `key` points at.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
    /// Whether `task` passes every condition of the filter a row can show:
    /// status, queue, name, root, correlation, created range and cursor
    /// (not the key, which lives beside the row; not limit or offset).
    ///
    /// ```
    /// # fn demo(task: &cairnq_core::Task) {
    /// use cairnq_core::{ListFilter, TaskStatus};
    /// let failed = ListFilter::new().status(TaskStatus::Failed);
    /// assert_eq!(failed.matches(task), task.status == TaskStatus::Failed);
    /// # }
    /// ```
    pub fn matches(&self, task: &Task) -> bool {
        let same = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| Some(w) == have);
        self.status.is_none_or(|s| s == task.status)
            && same(&self.queue, Some(&task.queue))
            && same(&self.name, Some(&task.name))
            && same(&self.root_id, task.root_id.as_deref())
            && same(&self.correlation_id, task.correlation_id.as_deref())
            && self.created_since_ms.is_none_or(|since| task.created_at_ms >= since)
            && self.created_until_ms.is_none_or(|until| task.created_at_ms <= until)
            && self.after.as_ref().is_none_or(|a| (task.created_at_ms, task.id.as_str()) < (a.created_at_ms, &a.id))
    }
    /// Only tasks created at or after `at` (a time range bounds the
    /// list-order walk, so a recent window reads only its own rows).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use cairnq_core::ListFilter;
    /// let last_hour = ListFilter::new().created_since(SystemTime::now() - Duration::from_secs(3600));
    /// assert!(last_hour.created_since_ms.is_some());
    /// ```
    pub fn created_since(mut self, at: SystemTime) -> Self {
        self.created_since_ms = Some(epoch_ms(at));
        self
    }
    /// Only tasks created at or before `at`.
    pub fn created_until(mut self, at: SystemTime) -> Self {
        self.created_until_ms = Some(epoch_ms(at));
        self
    }
    /// At most `limit` rows.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = i64::from(limit);
        self
    }
    /// Skips `offset` rows (prefer [`after`](Self::after) for deep pages).
    pub fn offset(mut self, offset: u32) -> Self {
        self.offset = i64::from(offset);
        self
    }
    /// The page after `cursor` (a [`TaskPage::next`](crate::TaskPage::next)).
    pub fn after(mut self, cursor: ListCursor) -> Self {
        self.after = Some(cursor);
        self
    }
}

/// What [`Store::purge`](crate::Store::purge) (and [`CairnQ::purge`](crate::CairnQ::purge)) deletes: terminal rows
/// completed strictly before `now - older_than`, oldest first, at most
/// `limit`. `Default`: any age, every terminal status,
/// limit 1000. Build one with the setters (the age is a
/// [`Duration`](std::time::Duration), [`older_than`](Self::older_than));
/// the fields are what a store reads.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::{PurgeFilter, TaskStatus};
/// let week = PurgeFilter::new().status(TaskStatus::Succeeded).older_than(Duration::from_secs(7 * 86_400));
/// assert_eq!(week.older_than_ms, 604_800_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeFilter {
    /// Only rows completed more than this many milliseconds ago (>= 0;
    /// the seam's unit, set through [`older_than`](Self::older_than)).
    pub older_than_ms: i64,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this status (must be terminal).
    pub status: Option<TaskStatus>,
    /// Only this handler name.
    pub name: Option<String>,
    /// At most this many rows (>= 1).
    pub limit: i64,
}

impl Default for PurgeFilter {
    fn default() -> Self {
        Self { older_than_ms: 0, queue: None, status: None, name: None, limit: 1000 }
    }
}

impl PurgeFilter {
    /// No filter.
    pub fn new() -> Self {
        Self::default()
    }
    /// Only rows completed more than `age` ago.
    pub fn older_than(mut self, age: Duration) -> Self {
        self.older_than_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        self
    }
    /// Only this queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }
    /// Only this status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// Only this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// At most this many rows.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = i64::from(limit);
        self
    }

    /// Refuses what no store may be asked: a negative age, a limit below 1,
    /// a non-terminal status, a queue or name holding a NUL character.
    pub fn validate(&self) -> Result<()> {
        require_non_negative("older_than_ms", self.older_than_ms)?;
        require_positive("limit", self.limit)?;
        for (field, value) in [("queue", &self.queue), ("name", &self.name)] {
            if let Some(value) = value {
                require_text(field, value)?;
            }
        }
        if let Some(status) = self.status.filter(|s| !s.is_terminal()) {
            return Err(Error::validation(
                "status",
                format!("{status} is not terminal; only terminal rows can be purged"),
            ));
        }
        Ok(())
    }
}

/// Which queues [`Store::repair`](crate::Store::repair) looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairParams {
    /// The queues to repair (a worker passes its own).
    pub queues: Vec<String>,
}

impl RepairParams {
    /// Repair rows of these queues.
    pub fn new(queues: Vec<String>) -> Self {
        Self { queues }
    }
}

/// What [`Store::repair`](crate::Store::repair) changed: rows no ordinary operation would have
/// moved, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repaired {
    /// Running rows that had no lease: given one that ends now, so the next
    /// claim's lease recovery takes them.
    pub expired: Vec<String>,
    /// Queued rows that had no `run_at_ms`: made due now.
    pub scheduled: Vec<String>,
}

impl Repaired {
    /// Whether nothing needed repair.
    pub fn is_empty(&self) -> bool {
        self.expired.is_empty() && self.scheduled.is_empty()
    }
}

/// `at` in epoch milliseconds, negative before 1970, saturating at the
/// ends of what an `i64` holds.
fn epoch_ms(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}
