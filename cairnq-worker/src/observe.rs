//! What a worker tells about each attempt, through the `tracing` and
//! `metrics` facades: the claim (`cairnq_tasks_claimed_total`, the queue
//! wait), the consumer span (`process QUEUE`, continuing the submit's trace
//! from the task's `traceparent`), and the settlement (its outcome counted
//! once, with the attempt's duration). The metric names live in
//! [`cairnq_core::observe`].
//!
//! Every event about an attempt (its settlement here, the reports of
//! [`crate::issue`] about it) names it with the same fields: `task_id`,
//! `name`, `queue`, `attempt`, `worker_id`, and `outcome`, `duration_ms`
//! and `error.kind` where there are some; [`Attempt`] keeps them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cairnq_core::observe::{Outcome, TASK_DURATION, TASK_QUEUE_WAIT, TASKS_CLAIMED, TASKS_SETTLED, TraceContext};
use cairnq_core::{ErrorEnvelope, Json, Task, TaskStatus};
use metrics::{Counter, Histogram};
use parking_lot::Mutex;
use tracing::Span;
use tracing::field::Empty;

/// Every outcome, in the order [`NameMeters`] keeps their handles.
const OUTCOMES: [Outcome; 5] =
    [Outcome::Succeeded, Outcome::Failed, Outcome::Retried, Outcome::Canceled, Outcome::LostLease];

/// The metric handles of one `(queue, name)`, registered once per worker:
/// counting an attempt is then a few atomic adds, not a label set built
/// and looked up in the recorder per task.
#[derive(Debug)]
pub(crate) struct NameMeters {
    queue: String,
    name: String,
    claimed: Counter,
    queue_wait: Histogram,
    settled: [(Counter, Histogram); 5],
}

impl NameMeters {
    fn register(queue: &str, name: &str) -> Self {
        let labels = [("queue", queue.to_string()), ("name", name.to_string())];
        let settled = OUTCOMES.map(|outcome| {
            let labels =
                [("queue", queue.to_string()), ("name", name.to_string()), ("outcome", outcome.as_str().into())];
            (metrics::counter!(TASKS_SETTLED, &labels[..]), metrics::histogram!(TASK_DURATION, &labels[..]))
        });
        Self {
            queue: queue.to_string(),
            name: name.to_string(),
            claimed: metrics::counter!(TASKS_CLAIMED, &labels[..]),
            queue_wait: metrics::histogram!(TASK_QUEUE_WAIT, &labels[..]),
            settled,
        }
    }
}

/// A worker's [`NameMeters`], by queue then name, and its id.
#[derive(Debug)]
pub(crate) struct Meters {
    worker_id: Arc<str>,
    by_queue: Mutex<HashMap<String, HashMap<String, Arc<NameMeters>>>>,
}

impl Meters {
    pub(crate) fn new(worker_id: &str) -> Self {
        Self { worker_id: worker_id.into(), by_queue: Mutex::default() }
    }

    fn of(&self, queue: &str, name: &str) -> Arc<NameMeters> {
        let mut by_queue = self.by_queue.lock();
        if let Some(meters) = by_queue.get(queue).and_then(|names| names.get(name)) {
            return meters.clone();
        }
        let meters = Arc::new(NameMeters::register(queue, name));
        by_queue.entry(queue.to_string()).or_default().insert(name.to_string(), meters.clone());
        meters
    }
}

/// One claimed attempt, as the telemetry sees it.
#[derive(Debug)]
pub(crate) struct Attempt {
    meters: Arc<NameMeters>,
    task_id: String,
    number: u32,
    worker_id: Arc<str>,
    claimed: Instant,
    /// Opened when the handler starts, on the call's own task: the claim
    /// loop dispatches every row of a claim in one pass, and a span
    /// formatted there for each would slow the one serial path of the
    /// worker (a buffered task lost before it ran never gets one).
    span: OnceLock<Span>,
}

impl Attempt {
    /// Counts the claim and opens the attempt's `process` span.
    pub(crate) fn claimed(task: &Task, meters: &Meters) -> Self {
        let worker_id = meters.worker_id.clone();
        let meters = meters.of(&task.queue, &task.name);
        meters.claimed.increment(1);
        // The claim stamps updated_at with the database clock, the clock
        // run_at and created_at were written with; the wait counts from
        // when the task became due (Task::due_at_ms, the one definition).
        let wait_ms = (task.updated_at_ms - task.due_at_ms()).max(0);
        meters.queue_wait.record(wait_ms as f64 / 1000.0);
        let (task_id, number) = (task.id.clone(), task.attempt);
        Self { meters, task_id, number, worker_id, claimed: Instant::now(), span: OnceLock::new() }
    }

    /// The attempt's `process` span, opened on first use.
    pub(crate) fn span(&self, task: &Task) -> Span {
        self.span.get_or_init(|| process_span(task, &self.worker_id)).clone()
    }

    /// The task's id.
    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task's name.
    pub(crate) fn name(&self) -> &str {
        &self.meters.name
    }

    /// The task's queue.
    pub(crate) fn queue(&self) -> &str {
        &self.meters.queue
    }

    /// Which attempt of the task this is (1 for the first).
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// Counts the attempt's end (the callers make sure it is counted once)
    /// and tells it as an event; `error` is the envelope a failure wrote.
    pub(crate) fn settled(&self, outcome: Outcome, error: Option<&Json>) {
        let elapsed = self.claimed.elapsed();
        let index = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(0);
        let (settled, duration) = &self.meters.settled[index];
        settled.increment(1);
        duration.record(elapsed.as_secs_f64());
        let none = Span::none();
        let span = self.span.get().unwrap_or(&none);
        span.record("cairnq.outcome", outcome.as_str());
        let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        // Field values are evaluated only when the event is enabled.
        tracing::debug!(
            parent: span,
            task_id = self.task_id(),
            name = self.name(),
            queue = self.queue(),
            attempt = self.number,
            worker_id = &*self.worker_id,
            outcome = outcome.as_str(),
            duration_ms,
            error.kind = failure_code(outcome, error),
            "cairnq task settled"
        );
    }

    /// Counts the attempt's end from the row its settle write left (its
    /// status, and the envelope of a failure).
    pub(crate) fn settled_as(&self, status: TaskStatus, error: Option<&Json>) {
        self.settled(Outcome::of_status(status), error);
    }
}

/// The `error.kind` of a settlement: the code of the envelope a failure
/// wrote (`task_error`, `handler_timeout`, ...), a small set of names
/// rather than the message.
fn failure_code(outcome: Outcome, error: Option<&Json>) -> Option<String> {
    if !matches!(outcome, Outcome::Failed | Outcome::Retried) {
        return None;
    }
    error.and_then(ErrorEnvelope::from_json).map(|envelope| envelope.code)
}

/// The consumer span of one attempt (`process QUEUE`): a child of the
/// submit's `send` span when the task carries a valid `traceparent`, a new
/// trace otherwise. Every field is given at creation (none recorded
/// later but the outcome): a formatting subscriber then formats the span
/// once, which is most of what a span costs. Text fields are given as
/// `Display` (`%`), which a formatter writes as they are; a `&str` value is
/// written through `Debug`, escaped character by character, and the ids as
/// fixed-width hex without a string in between (callgrind: together about
/// a fifth of the span's cost under tracing-subscriber's fmt).
fn process_span(task: &Task, worker_id: &str) -> Span {
    if !tracing::enabled!(tracing::Level::INFO) {
        return Span::none();
    }
    let parent = TraceContext::from_metadata(&task.metadata);
    let context = parent.map_or_else(TraceContext::root, |p| p.child());
    tracing::info_span!(
        "process",
        otel.name = %format_args!("process {}", task.queue),
        otel.kind = %"consumer",
        messaging.system = %"cairnq",
        messaging.operation.type = %"process",
        messaging.destination.name = %task.queue,
        messaging.message.id = %task.id,
        cairnq.task.name = %task.name,
        cairnq.attempt = task.attempt,
        cairnq.worker_id = %worker_id,
        cairnq.outcome = Empty,
        trace_id = %context.trace_id_hex(),
        span_id = %context.span_id_hex(),
        parent_span_id = parent.map(|p| tracing::field::display(p.span_id_hex())),
    )
}
