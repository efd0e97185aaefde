//! The rows and values cairnq hands to callers.
//!
//! Field names are the column names of PROTOCOL.md, so a [`Task`] serialized
//! with serde is the same JSON object every cairnq SDK shows for that row.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::json::{Json, JsonError};

/// The canonical task states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Waiting to be claimed (possibly not yet due).
    Queued,
    /// Claimed by a worker that holds a lease.
    Running,
    /// Finished with a result.
    Succeeded,
    /// Finished with an error envelope and no attempts left (or not retryable).
    Failed,
    /// Canceled before or while running.
    Canceled,
}

impl TaskStatus {
    /// Every status, in the order stats report them.
    pub const ALL: [TaskStatus; 5] = [Self::Queued, Self::Running, Self::Succeeded, Self::Failed, Self::Canceled];

    /// The status as stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }

    /// Whether no transition but `retry` or `purge` leaves this status.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        Self::ALL.into_iter().find(|status| status.as_str() == s).ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// A status text no protocol state names (a validation error when a
/// caller gives it, through `?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let valid: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
        write!(f, "{:?} is not a task status (valid: {})", self.0, valid.join(", "))
    }
}

impl std::error::Error for UnknownStatus {}

/// One task row: one execution of a handler by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// `task_` + ULID.
    pub id: String,
    /// The handler name.
    pub name: String,
    /// The queue the task waits on.
    pub queue: String,
    /// Where the task is in its life.
    pub status: TaskStatus,
    /// The handler's input.
    pub payload: Json,
    /// The handler's output, once succeeded.
    pub result: Option<Json>,
    /// The last error envelope, if any attempt failed.
    pub error: Option<Json>,
    /// Free-form caller metadata (a JSON object).
    pub metadata: Json,
    /// 0..1, reported by the handler.
    pub progress: Option<f64>,
    /// Free-text progress message.
    pub message: Option<String>,
    /// How many times the task has been claimed.
    pub attempt: u32,
    /// Claims allowed before a retryable failure becomes final.
    pub max_attempts: u32,
    /// Higher runs first.
    pub priority: i32,
    /// The worker that holds or last held the task.
    pub worker_id: Option<String>,
    /// When the lease ends; set exactly while running.
    pub lease_until_ms: Option<i64>,
    /// Not claimable before this time.
    pub run_at_ms: i64,
    /// When a cancel was requested while the task was running.
    pub cancel_requested_at_ms: Option<i64>,
    /// The task that submitted this one.
    pub parent_id: Option<String>,
    /// The first task of the chain (its own id for a top-level task).
    pub root_id: Option<String>,
    /// Caller-chosen id tying related tasks together.
    pub correlation_id: Option<String>,
    /// Insert time.
    pub created_at_ms: i64,
    /// Last write time.
    pub updated_at_ms: i64,
    /// When the task became terminal.
    pub completed_at_ms: Option<i64>,
}

impl Task {
    /// The payload decoded into `P`.
    ///
    /// ```
    /// # use cairnq_core::Task;
    /// # fn demo(task: &Task) -> cairnq_core::Result<()> {
    /// #[derive(serde::Deserialize)]
    /// struct Email { to: String }
    /// let email: Email = task.payload_as()?;
    /// # Ok(()) }
    /// ```
    pub fn payload_as<P: DeserializeOwned>(&self) -> Result<P, JsonError> {
        self.payload.decode()
    }

    /// The result decoded into `R` (`null` when the task has none).
    pub fn result_as<R: DeserializeOwned>(&self) -> Result<R, JsonError> {
        self.result.as_ref().map_or_else(|| Json::null().decode(), Json::decode)
    }

    /// A reference to this task: its id and status.
    pub fn as_ref(&self) -> TaskRef {
        TaskRef { id: self.id.clone(), status: self.status }
    }

    /// Whether the task has ended (succeeded, failed or canceled).
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// Whether someone asked to cancel the task while it was running.
    pub fn cancel_requested(&self) -> bool {
        self.cancel_requested_at_ms.is_some()
    }

    /// The recorded error as plain text: the error envelope's `message`
    /// (what a person reads, not the JSON around it); an error some other
    /// writer stored in another shape, as its JSON text; `None` when no
    /// error is recorded.
    ///
    /// ```
    /// # use cairnq_core::Task;
    /// # fn demo(task: &Task) {
    /// if let Some(message) = task.error_message() {
    ///     eprintln!("{} failed: {message}", task.id);
    /// }
    /// # }
    /// ```
    pub fn error_message(&self) -> Option<String> {
        let error = self.error.as_ref()?;
        let value = error.to_value().ok();
        let message = value.as_ref().and_then(|v| v.get("message")).and_then(serde_json::Value::as_str);
        Some(message.map_or_else(|| error.as_str().to_string(), str::to_string))
    }

    /// When the task became (or becomes) due, in epoch ms: the later of
    /// `run_at_ms` and `created_at_ms`, since no task is waiting before it
    /// exists. This is the one definition of "waiting since" every view
    /// shares: how long a queued task has waited is now minus this (a
    /// delayed task, due later, has not started waiting), and
    /// [`Store::oldest_due`](crate::Store::oldest_due) reads the oldest
    /// of them per queue by the same rule.
    ///
    /// ```
    /// # use cairnq_core::Task;
    /// # fn demo(task: &Task) {
    /// let waited_ms = |now_ms: i64| (now_ms - task.due_at_ms()).max(0);
    /// assert!(task.due_at_ms() >= task.created_at_ms && task.due_at_ms() >= task.run_at_ms);
    /// # }
    /// ```
    pub fn due_at_ms(&self) -> i64 {
        self.run_at_ms.max(self.created_at_ms)
    }
}

/// A task's id and status: what `get_status` returns and `wait` polls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    /// The task id.
    pub id: String,
    /// Its current status.
    pub status: TaskStatus,
}

/// How many tasks of one queue are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounts {
    /// Tasks waiting (including delayed ones).
    pub queued: u64,
    /// Tasks held by a worker.
    pub running: u64,
    /// Tasks finished with a result.
    pub succeeded: u64,
    /// Tasks finished with an error.
    pub failed: u64,
    /// Tasks canceled.
    pub canceled: u64,
    /// Rows whose status no protocol state names (written by a foreign or
    /// broken writer): counted here so the other counts stay right.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrecognized: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl QueueCounts {
    /// The count for one status.
    pub fn get(&self, status: TaskStatus) -> u64 {
        match status {
            TaskStatus::Queued => self.queued,
            TaskStatus::Running => self.running,
            TaskStatus::Succeeded => self.succeeded,
            TaskStatus::Failed => self.failed,
            TaskStatus::Canceled => self.canceled,
        }
    }

    fn slot(&mut self, status: TaskStatus) -> &mut u64 {
        match status {
            TaskStatus::Queued => &mut self.queued,
            TaskStatus::Running => &mut self.running,
            TaskStatus::Succeeded => &mut self.succeeded,
            TaskStatus::Failed => &mut self.failed,
            TaskStatus::Canceled => &mut self.canceled,
        }
    }
}

/// Counts per queue and status: every status present (zero-filled); a queue
/// with no rows is absent unless it is the queue that was asked for.
pub type Stats = BTreeMap<String, QueueCounts>;

/// One `(queue, status, count)` group, as a store counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCount {
    /// The queue.
    pub queue: String,
    /// The status; `None` for a status string no protocol state names.
    pub status: Option<TaskStatus>,
    /// How many rows.
    pub count: u64,
}

/// How long a queue's oldest due queued task has waited since it became
/// due ([`Task::due_at_ms`]), as a store reads it
/// ([`Store::oldest_due`](crate::Store::oldest_due)).
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::QueueAge;
/// let age = QueueAge::from_ms("mail", "task_01", 1_500);
/// assert_eq!((age.task_id.as_str(), age.age), ("task_01", Duration::from_millis(1_500)));
/// assert_eq!(QueueAge::from_ms("mail", "task_01", -3).age, Duration::ZERO); // a clock step back
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueAge {
    /// The queue.
    pub queue: String,
    /// The task that has waited longest (one of them, when several
    /// became due at the same moment).
    pub task_id: String,
    /// How long since that task became due (the store's clock).
    pub age: Duration,
}

impl QueueAge {
    /// The age a store read in milliseconds (what the seam's SQL yields); a
    /// negative one (the clock stepped back since the task became due)
    /// reads as zero.
    pub fn from_ms(queue: impl Into<String>, task_id: impl Into<String>, age_ms: i64) -> Self {
        let age = Duration::from_millis(u64::try_from(age_ms).unwrap_or(0));
        Self { queue: queue.into(), task_id: task_id.into(), age }
    }
}

/// Folds raw counts into [`Stats`], zero-filling every status, and adding the
/// asked-for queue even when it has no rows. Unrecognized statuses add to
/// [`QueueCounts::unrecognized`].
pub(crate) fn fold_stats(counts: impl IntoIterator<Item = TaskCount>, asked: Option<&str>) -> Stats {
    let mut stats = Stats::new();
    if let Some(queue) = asked {
        stats.insert(queue.to_string(), QueueCounts::default());
    }
    for c in counts {
        let counts = stats.entry(c.queue).or_default();
        match c.status {
            Some(status) => *counts.slot(status) += c.count,
            None => counts.unrecognized += c.count,
        }
    }
    stats
}

/// A stored row the SDK could not decode (a foreign or corrupted writer):
/// which task, which column, and why. Reads report it instead of failing a
/// whole page; a claim that draws it fails just that task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undecodable {
    /// The row's id, when the id itself could be read.
    pub task_id: Option<String>,
    /// The first column that could not be decoded.
    pub column: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Undecodable {
    /// A report for `column` of the row `task_id`.
    pub fn new(task_id: Option<String>, column: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { task_id, column: column.into(), reason: reason.into() }
    }
}

impl fmt::Display for Undecodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let task = self.task_id.as_deref().unwrap_or("(id unreadable)");
        write!(f, "task {task}: cairnq_tasks column {:?} cannot be decoded: {}", self.column, self.reason)
    }
}

/// One page of [`CairnQ::list`](crate::CairnQ::list): the rows that decoded,
/// newest first, and a report of each row that did not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskPage {
    /// The rows of the page that decoded, in list order.
    pub tasks: Vec<Task>,
    /// The rows of the page that did not, in list order.
    pub undecodable: Vec<Undecodable>,
    /// Where the next page starts, when this one was full ([`ListFilter::after`](crate::ListFilter::after)).
    /// It is the last decoded row's place, so undecodable rows at the very
    /// end of a page are listed again on the next.
    pub next: Option<ListCursor>,
}

/// A place in list order (newest first): a row's `created_at_ms` and id.
/// Its text form (`Display` / `FromStr`, e.g. for a command line or a URL)
/// is `<created_at_ms>.<id>`.
///
/// ```
/// use cairnq_core::ListCursor;
/// let cursor: ListCursor = "1733011200000.task_01JDX0".parse()?;
/// assert_eq!(cursor.created_at_ms, 1733011200000);
/// assert_eq!(cursor.to_string(), "1733011200000.task_01JDX0");
/// assert!("yesterday".parse::<ListCursor>().is_err());
/// # Ok::<(), cairnq_core::ParseCursorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
#[non_exhaustive]
pub struct ListCursor {
    /// The row's insert time.
    pub created_at_ms: i64,
    /// The row's id (the tie-breaker).
    pub id: String,
}

impl ListCursor {
    /// The place of `task`.
    pub fn of(task: &Task) -> Self {
        Self { created_at_ms: task.created_at_ms, id: task.id.clone() }
    }
}

impl fmt::Display for ListCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.created_at_ms, self.id)
    }
}

impl From<ListCursor> for String {
    fn from(cursor: ListCursor) -> Self {
        cursor.to_string()
    }
}

impl TryFrom<String> for ListCursor {
    type Error = ParseCursorError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

/// Text that is not a [`ListCursor`]; it converts into a validation
/// [`Error`](crate::Error) on the `after` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseCursorError(pub String);

impl fmt::Display for ParseCursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a list cursor (<created_at_ms>.<id>)", self.0)
    }
}

impl std::error::Error for ParseCursorError {}

impl FromStr for ListCursor {
    type Err = ParseCursorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ParseCursorError(text.to_string());
        let (ms, id) = text.split_once('.').ok_or_else(bad)?;
        let created_at_ms = ms.parse().map_err(|_| bad())?;
        if id.is_empty() || id.contains('\0') {
            return Err(bad());
        }
        Ok(Self { created_at_ms, id: id.to_string() })
    }
}

impl TaskPage {
    /// Splits a store's rows into the decoded tasks and the reports.
    pub fn from_rows(rows: impl IntoIterator<Item = std::result::Result<Task, Undecodable>>) -> Self {
        let mut page = Self::default();
        for row in rows {
            match row {
                Ok(task) => page.tasks.push(task),
                Err(bad) => page.undecodable.push(bad),
            }
        }
        page
    }
}

/// A lease the store confirmed in `heartbeat_batch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLease {
    /// The task still owned by the caller.
    pub id: String,
    /// Set when someone asked to cancel the task.
    pub cancel_requested_at_ms: Option<i64>,
}

impl HeldLease {
    /// Whether a cancel is pending for the task.
    pub fn cancel_requested(&self) -> bool {
        self.cancel_requested_at_ms.is_some()
    }
}
