//! Observability that every layer shares: the names of the metrics (one
//! list, so the worker, the exporters and the tests cannot drift apart), the
//! W3C trace context a submit writes into a task's metadata and a worker
//! continues, the cached collector of the queue gauges, and the one
//! outage state per store that keeps a database outage to a few lines.
//!
//! Everything goes through facades (`tracing`, `metrics`): nothing is
//! recorded until the application installs a subscriber or a recorder, and
//! the library never chooses an exporter.
//!
//! # Trace ids without OpenTelemetry
//!
//! cairnq keeps trace ids of its own as span fields, so an application
//! needs no OpenTelemetry crate to follow a task across processes: a `send`
//! span records `trace_id` and `span_id` (random, or continuing the
//! `traceparent` the caller put in the task's metadata), writes its own
//! `traceparent` into the metadata, and the worker's `process` span records
//! the same `trace_id` with `parent_span_id` = the send span's `span_id`.
//! A subscriber that exports to OpenTelemetry can read those fields. The
//! metadata is written only when some subscriber records the send span, so
//! a process without tracing pays nothing and its rows are unchanged.

mod outage;
mod trace;

pub use outage::{OUTAGE_REMINDER, Outage, OutageNews};
pub(crate) use trace::send_span;
pub use trace::{TRACEPARENT, TraceContext};

/// Counter `{queue, name}`: tasks submitted.
pub const TASKS_SUBMITTED: &str = "cairnq_tasks_submitted_total";
/// Counter `{queue, name}`: tasks a worker claimed.
pub const TASKS_CLAIMED: &str = "cairnq_tasks_claimed_total";
/// Counter `{queue, name, outcome}`: attempts settled (see [`Outcome`]).
pub const TASKS_SETTLED: &str = "cairnq_tasks_settled_total";
/// Counter `{queue}`: expired leases a claim took back.
pub const LEASES_RECOVERED: &str = "cairnq_leases_recovered_total";
/// Histogram `{queue, name, outcome}`: seconds from claim to settlement.
pub const TASK_DURATION: &str = "cairnq_task_duration_seconds";
/// Histogram `{queue, name}`: seconds from when a task became due
/// ([`Task::due_at_ms`](crate::Task::due_at_ms)) to its claim (both read
/// from the database clock).
pub const TASK_QUEUE_WAIT: &str = "cairnq_task_queue_wait_seconds";
/// Gauge `{queue, status}`: tasks per status, from [`QueueGauges`](crate::QueueGauges).
pub const QUEUE_DEPTH: &str = "cairnq_queue_depth";
/// Gauge `{queue}`: seconds the oldest due queued task has waited since it
/// became due (0 when none waits), from [`QueueGauges`](crate::QueueGauges).
pub const QUEUE_OLDEST_AGE: &str = "cairnq_queue_oldest_age_seconds";
/// Gauge `{key}`: tasks running under each limit (a prefix default's
/// `tenant:*` sums its keys), from [`QueueGauges`](crate::QueueGauges).
/// The label is a limit's key: as many series as limits are set.
pub const LIMIT_RUNNING: &str = "cairnq_limit_running";
/// Counter `{key}`: claims that passed over queued tasks of a key because
/// its limit left no room, one per claim and key passed over, labelled
/// with the limit's key (`tenant:*` for a prefix default). Counted by the
/// claiming process, before the claim commits (see [`limits_throttled`]).
pub const LIMIT_THROTTLED: &str = "cairnq_limit_throttled_total";
/// Counter `{schedule}`: slots a schedule fired, one task each (a
/// trigger-now included), counted by the process whose fire won. The label
/// is the schedule's name: as many series as the application declares.
pub const SCHEDULE_FIRES: &str = "cairnq_schedule_fires_total";
/// Counter `{schedule}`: slots a schedule passed over (catch-up `skip`,
/// beyond `all`'s window or cap, older than `latest`'s one, overlap `skip`).
pub const SCHEDULE_MISSED: &str = "cairnq_schedule_missed_total";

/// How an attempt ended, the `outcome` label of [`TASKS_SETTLED`] and
/// [`TASK_DURATION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Completed.
    Succeeded,
    /// Failed for good.
    Failed,
    /// Failed and queued again for another attempt.
    Retried,
    /// Ended canceled (a cancel won over the settle).
    Canceled,
    /// The lease was gone: another worker may run the task.
    LostLease,
}

impl Outcome {
    /// The label value: `succeeded`, `failed`, `retried`, `canceled`,
    /// `lost_lease`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Retried => "retried",
            Self::Canceled => "canceled",
            Self::LostLease => "lost_lease",
        }
    }

    /// The outcome a settle write left `status` in (a settled row is never
    /// running; `queued` means queued again).
    ///
    /// ```
    /// use cairnq_core::{TaskStatus, observe::Outcome};
    /// assert_eq!(Outcome::of_status(TaskStatus::Queued), Outcome::Retried);
    /// ```
    pub fn of_status(status: crate::TaskStatus) -> Self {
        use crate::TaskStatus as S;
        match status {
            S::Succeeded => Self::Succeeded,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
            S::Queued | S::Running => Self::Retried,
        }
    }
}

/// Counts the leases one claim recovered, given the queue of each
/// ([`LEASES_RECOVERED`]). The shared claim flow calls it; a backend with a
/// claim of its own calls it too. Counted before the claim commits: a claim
/// that then fails over-counts, which only a failing store does.
///
/// ```
/// cairnq_core::observe::leases_recovered(["images", "images", "default"].into_iter());
/// ```
pub fn leases_recovered<'a>(queues: impl Iterator<Item = &'a str>) {
    let mut per_queue: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for queue in queues {
        *per_queue.entry(queue).or_default() += 1;
    }
    for (queue, n) in per_queue {
        metrics::counter!(LEASES_RECOVERED, "queue" => queue.to_string()).increment(n);
    }
}

/// Counts the keys one claim passed over at their limit, given the key of
/// the limit that applies to each ([`LIMIT_THROTTLED`],
/// [`Admission::throttled`](crate::backend::Admission::throttled)). The
/// shared claim flow calls it; a backend with a claim of its own calls it
/// too. What a claim learns is approximate, and says so: a claim meets
/// only the keys it walks to (on one queue, the keys of the priorities it
/// reaches; a key that reaches its limit inside a claim counts from the
/// next claim that meets it), the group walk counts a key whose queued
/// tasks are not due yet, and a claim that then fails over-counts.
///
/// ```
/// cairnq_core::observe::limits_throttled(["tenant:*", "tenant:*", "api"].into_iter());
/// ```
pub fn limits_throttled<'a>(keys: impl Iterator<Item = &'a str>) {
    let mut per_key: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for key in keys {
        *per_key.entry(key).or_default() += 1;
    }
    for (key, n) in per_key {
        metrics::counter!(LIMIT_THROTTLED, "key" => key.to_string()).increment(n);
    }
}

/// Counts one submitted task.
pub(crate) fn submitted(queue: &str, name: &str) {
    metrics::counter!(TASKS_SUBMITTED, "queue" => queue.to_string(), "name" => name.to_string()).increment(1);
}

/// Counts one won fire of `schedule`: each fired task as submitted, the
/// slots fired and the slots passed over.
pub(crate) fn schedule_fired(schedule: &str, fired: &[crate::Task], missed: u64) {
    for task in fired {
        submitted(&task.queue, &task.name);
    }
    metrics::counter!(SCHEDULE_FIRES, "schedule" => schedule.to_string()).increment(fired.len() as u64);
    metrics::counter!(SCHEDULE_MISSED, "schedule" => schedule.to_string()).increment(missed);
}
