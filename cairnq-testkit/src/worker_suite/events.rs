//! The events a worker tells about an attempt carry the same stable fields
//! (task_id, name, queue, attempt, worker_id, and outcome, duration_ms and
//! error.kind where there are some), so a log search for a task finds its
//! settlement and every report about it.

use std::sync::Arc;

use cairnq_core::TaskStatus;
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};

use super::support::{eventually, finished, fresh, quick_options, start};
use super::telemetry::start_forgetful;
use crate::BackendFactory;
use crate::telemetry::{RecordedEvent, SpanRecorder};

/// The settled event of a success and of a failure, and the report of a
/// lost lease (a worker whose store renews no lease), each naming its
/// attempt.
///
/// Run on a current-thread runtime: every task of the workers then runs on
/// the test's thread, the only one whose events this test records (other
/// tests of the process run on threads of their own).
pub async fn worker_events_name_their_attempt(factory: &dyn BackendFactory) {
    let events = Arc::new(SpanRecorder::new());
    let _recording = tracing::subscriber::set_default(events.clone());
    let (client, fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options().worker_id("w-events"), |w| {
        w.task("works", |_: TaskContext, _: Value| async move { Ok::<_, TaskError>(()) }).expect("register");
        w.task("breaks", |_: TaskContext, _: Value| async move { Err::<(), _>(TaskError::new("no")) })
            .expect("register");
    });
    let _forgetful = start_forgetful(&fresh.store, quick_options().worker_id("w-forgetful").queues(["held"]));
    let works = client.submit("works", &json!({})).await.expect("submit");
    let breaks = client.submit("breaks", &json!({})).max_attempts(1).await.expect("submit");
    let held = client.submit("held", &json!({})).queue("held").max_attempts(1).await.expect("submit");
    assert_eq!(finished(&client, &works.id).await.status, TaskStatus::Succeeded);
    assert_eq!(finished(&client, &breaks.id).await.status, TaskStatus::Failed);
    let lost = |e: &RecordedEvent| e.field("message").contains("lost the lease") && e.field("task_id") == held.id;
    eventually("the lost lease reported", || async { events.events().iter().any(lost) }).await;

    let settled = |task_id: &str| {
        let mut found = events.events().into_iter().filter(|e| e.field("message") == "cairnq task settled");
        found.find(|e| e.field("task_id") == task_id).expect("a settled event")
    };
    assert_named(&settled(&works.id), "works", "default", "w-events", "succeeded");
    assert_eq!(settled(&works.id).field("error.kind"), "", "a success has no error");
    let failed = settled(&breaks.id);
    assert_named(&failed, "breaks", "default", "w-events", "failed");
    assert_eq!(failed.field("error.kind"), "task_error", "the envelope's code");
    for event in [&settled(&works.id), &failed] {
        assert!(event.field("duration_ms").parse::<u64>().is_ok(), "a duration: {event:?}");
    }
    let report = events.events().into_iter().find(lost).expect("reported");
    assert_eq!(report.level, "WARN");
    assert_named(&report, "held", "held", "w-forgetful", "lost_lease");
    assert_named(&settled(&held.id), "held", "held", "w-forgetful", "lost_lease");
}

/// `event` names a first attempt of `name` on `queue` by `worker_id` that
/// ended `outcome`.
fn assert_named(event: &RecordedEvent, name: &str, queue: &str, worker_id: &str, outcome: &str) {
    for (field, value) in
        [("name", name), ("queue", queue), ("attempt", "1"), ("worker_id", worker_id), ("outcome", outcome)]
    {
        assert_eq!(event.field(field), value, "{field}: {event:?}");
    }
}
