//! Trace propagation across processes: a task submitted here and run by a
//! worker in another process yields a `process` span there whose parent is
//! this process's `send` span, through the `traceparent` the task carries
//! in its metadata.

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::observe::TRACEPARENT;
use serde_json::{Value, json};

use super::support::{finished, fresh};
use crate::BackendFactory;
use crate::child::{ChildArgs, ChildMode, ChildProcess};
use crate::telemetry::{RecordedSpan, SpanRecorder};

const CHILD_PATIENCE: Duration = Duration::from_secs(60);

/// The send span of a submit here, and the process span of a worker
/// process: same trace, parent and child, with the messaging attributes.
pub async fn a_process_span_continues_the_send_span_across_processes(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let spans = Arc::new(SpanRecorder::new());
    let task = {
        // This thread only: other tests of the process run elsewhere.
        let _recording = tracing::subscriber::set_default(spans.clone());
        client.submit("noop", &json!({})).await.expect("submit")
    };
    let send = spans.closed().into_iter().find(|s| s.name == "send").expect("a send span");
    assert_fields(&send, &task.id, &[("otel.name", "send default"), ("otel.kind", "producer")]);
    let metadata: Value = task.metadata.to_value().expect("metadata");
    let expected = format!("00-{}-{}-01", send.field("trace_id"), send.field("span_id"));
    assert_eq!(metadata[TRACEPARENT], json!(expected), "the send span's context rides in the metadata");

    let mut args = ChildArgs::new(locator, ChildMode::Noop);
    args.report_spans = true;
    let mut child = ChildProcess::spawn(&args).expect("start the child worker");
    let ready = child.line_starting("ready ", CHILD_PATIENCE).await.expect("the child is ready");
    let worker_id = ready.split(' ').nth(2).expect("a worker id").to_string();
    let process = process_span_of(&mut child, &task.id).await;
    assert_eq!(finished(&client, &task.id).await.status, cairnq_core::TaskStatus::Succeeded);
    let (status, lines) = child.stop(CHILD_PATIENCE).await.expect("the child exits after SIGTERM");
    assert!(status.success(), "the child exited with {status}: {lines:?}");

    assert_eq!(process.field("trace_id"), send.field("trace_id"), "one trace: {process:?}");
    assert_eq!(process.field("parent_span_id"), send.field("span_id"), "the send span is the parent");
    assert_ne!(process.field("span_id"), send.field("span_id"));
    let own = [
        ("otel.name", "process default"),
        ("otel.kind", "consumer"),
        ("cairnq.attempt", "1"),
        ("cairnq.worker_id", worker_id.as_str()),
        ("cairnq.outcome", "succeeded"),
    ];
    assert_fields(&process, &task.id, &own);
}

/// `span`, of either kind, carries the messaging attributes of the `noop`
/// task `task_id` on `default`, and the fields `own`.
fn assert_fields(span: &RecordedSpan, task_id: &str, own: &[(&str, &str)]) {
    let messaging = [
        ("messaging.system", "cairnq"),
        ("messaging.destination.name", "default"),
        ("messaging.message.id", task_id),
        ("cairnq.task.name", "noop"),
    ];
    for (field, value) in messaging.iter().chain(own) {
        assert_eq!(span.field(field), *value, "{field}: {span:?}");
    }
}

/// The `process` span the child printed for `task_id`.
async fn process_span_of(child: &mut ChildProcess, task_id: &str) -> RecordedSpan {
    loop {
        let line = child.line_starting("span ", CHILD_PATIENCE).await.expect("the child prints a process span");
        let span: RecordedSpan = serde_json::from_str(&line["span ".len()..]).expect("a span as JSON");
        if span.field("messaging.message.id") == task_id {
            return span;
        }
    }
}
