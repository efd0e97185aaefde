//! What a worker tells about each attempt, through the `tracing` and
//! `metrics` facades: the claim (`cairnq_tasks_claimed_total`, the queue
//! wait), the consumer span (`process QUEUE`, continuing the submit's trace
//! from the task's `traceparent`), and the settlement (its outcome counted
//! once, with the attempt's duration). The metric names live in
//! [`cairnq_core::observe`].

use std::time::Instant;

use cairnq_core::observe::{Outcome, TASK_DURATION, TASK_QUEUE_WAIT, TASKS_CLAIMED, TASKS_SETTLED, TraceContext};
use cairnq_core::{Task, TaskStatus};
use tracing::Span;
use tracing::field::Empty;

/// One claimed attempt, as the telemetry sees it.
#[derive(Debug)]
pub(crate) struct Attempt {
    queue: String,
    name: String,
    claimed: Instant,
    span: Span,
}

impl Attempt {
    /// Counts the claim and opens the attempt's `process` span.
    pub(crate) fn claimed(task: &Task, worker_id: &str) -> Self {
        let labels = [("queue", task.queue.clone()), ("name", task.name.clone())];
        metrics::counter!(TASKS_CLAIMED, &labels[..]).increment(1);
        // The claim stamps updated_at with the database clock, the clock
        // run_at was written with.
        let wait_ms = (task.updated_at_ms - task.run_at_ms).max(0);
        metrics::histogram!(TASK_QUEUE_WAIT, &labels[..]).record(wait_ms as f64 / 1000.0);
        Self {
            queue: task.queue.clone(),
            name: task.name.clone(),
            claimed: Instant::now(),
            span: process_span(task, worker_id),
        }
    }

    /// The attempt's `process` span.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Counts the attempt's end (the callers make sure it is counted once).
    pub(crate) fn settled(&self, outcome: Outcome) {
        let elapsed = self.claimed.elapsed();
        let labels =
            [("queue", self.queue.clone()), ("name", self.name.clone()), ("outcome", outcome.as_str().to_string())];
        metrics::counter!(TASKS_SETTLED, &labels[..]).increment(1);
        metrics::histogram!(TASK_DURATION, &labels[..]).record(elapsed.as_secs_f64());
        self.span.record("cairnq.outcome", outcome.as_str());
        let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(parent: &self.span, outcome = outcome.as_str(), duration_ms, "cairnq task settled");
    }

    /// Counts the attempt's end from the status its settle write left.
    pub(crate) fn settled_as(&self, status: TaskStatus) {
        self.settled(Outcome::of_status(status));
    }
}

/// The consumer span of one attempt (`process QUEUE`): a child of the
/// submit's `send` span when the task carries a valid `traceparent`, a new
/// trace otherwise.
fn process_span(task: &Task, worker_id: &str) -> Span {
    let span = tracing::info_span!(
        "process",
        otel.name = %format_args!("process {}", task.queue),
        otel.kind = "consumer",
        messaging.system = "cairnq",
        messaging.operation.type = "process",
        messaging.destination.name = %task.queue,
        messaging.message.id = %task.id,
        cairnq.task.name = %task.name,
        cairnq.attempt = task.attempt,
        cairnq.worker_id = worker_id,
        cairnq.outcome = Empty,
        task_id = %task.id,
        trace_id = Empty,
        span_id = Empty,
        parent_span_id = Empty,
    );
    if !span.is_disabled() {
        TraceContext::start_span(&span, &task.metadata);
    }
    span
}
