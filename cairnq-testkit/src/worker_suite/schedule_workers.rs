//! The worker's part in schedules, on every backend: firing is on by
//! default and off when asked; a code-owned schedule the worker no longer
//! declares reaches `on_error`; and a fire's tasks are submits like any
//! other to the telemetry (a `send` span each, counted as submitted) with
//! the schedule's own fire and miss counters.

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::observe::{SCHEDULE_FIRES, SCHEDULE_MISSED, TASKS_SUBMITTED, TRACEPARENT};
use cairnq_core::{CairnQ, ListFilter, Schedule, ScheduleOwner, TaskStatus};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::schedule_policies::{count_named, every_minute, half_a_minute_off, rewind};
use super::support::{eventually, fresh, quick_options, start};
use crate::BackendFactory;
use crate::telemetry::{SpanRecorder, recorder};

/// Registers `beat`, a task that succeeds.
fn beat(worker: &mut Worker) {
    worker.task("beat", |_: TaskContext, _: Value| async move { Ok::<_, TaskError>(()) }).expect("register");
}

/// A worker told `schedules_every(None)` fires nothing, however long a
/// schedule has been due; a worker left at the default fires it (and runs
/// its task).
pub async fn a_worker_fires_due_schedules_unless_opted_out(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let every_second = Schedule::every("beat", Duration::from_secs(1), "beat").expect("valid");
    let first = client.save_schedule(&every_second).await.expect("save").next_fire_ms;
    let opted_out = start(&client, quick_options().schedules_every(None), beat);
    // Two slots come due meanwhile, and the worker polls every 25 ms.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    opted_out.stop_and_join().await.expect("the worker stops");
    assert_eq!(count_named(&client, "beat").await, 0, "nothing fired");
    let info = client.schedule("beat").await.expect("read").expect("exists");
    assert_eq!((info.next_fire_ms, info.last_slot_ms), (first, None), "nobody touched the row");

    let options = quick_options();
    assert_eq!(options.schedules_every, WorkerOptions::new().schedules_every, "the default");
    let _worker = start(&client, options, beat);
    eventually("the default worker fired the schedule and ran its task", || async {
        let done = ListFilter::new().name("beat").status(TaskStatus::Succeeded);
        !client.list(&done).await.expect("list").tasks.is_empty()
    })
    .await;
}

/// A code-owned schedule in the database that this worker does not declare
/// is reported to `on_error` by name, and left in place; the declared one
/// is upserted as code-owned.
pub async fn a_worker_reports_schedules_it_no_longer_declares(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.declare_schedules(&[every_minute("old")]).await.expect("an earlier deployment declared it");
    let reported: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let seen = reported.clone();
    let options = quick_options().schedule(every_minute("new")).on_error(move |issue: WorkerIssue| {
        if let WorkerIssue::UndeclaredSchedules { names } = issue {
            seen.lock().push(names);
        }
    });
    let _worker = start(&client, options, beat);
    eventually("the undeclared schedule reported", || async { !reported.lock().is_empty() }).await;
    assert_eq!(*reported.lock(), [vec!["old".to_string()]], "once, by name");
    assert!(client.schedule("old").await.expect("read").is_some(), "never deleted silently");
    let new = client.schedule("new").await.expect("read").expect("declared at start");
    assert_eq!(new.owner, ScheduleOwner::Code);
}

/// A fire after a ten-minute outage (catch-up `latest`): its task is
/// counted as submitted on its queue and name and gets a `send` span whose
/// context rides in its metadata; the schedule counts one fire and ten
/// misses. A trigger counts a fire; a pass with nothing due counts nothing.
pub async fn schedule_fires_are_counted_and_traced_as_submits(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, fresh) = fresh(factory).await;
    // The label keeps this test's series apart from the other tests'.
    let name = format!("metered-{:016x}", fastrand::u64(..));
    let (spec, newest) = half_a_minute_off(fresh.store.as_ref()).await;
    let schedule = Schedule::cron(&name, &spec, "fired").expect("valid").queue(&name);
    client.save_schedule(&schedule).await.expect("save");
    rewind(fresh.store.as_ref(), &name, newest - 600_000).await;
    let spans = Arc::new(SpanRecorder::new());
    let report = {
        // This thread only: other tests of the process run elsewhere.
        let _recording = tracing::subscriber::set_default(spans.clone());
        client.fire_due_schedules().await.expect("fire")
    };
    assert_eq!((report.fired.len(), report.missed), (1, 10));
    let task = &report.fired[0];
    let send = spans.closed().into_iter().find(|s| s.name == "send").expect("a send span for the fired task");
    assert_eq!((send.field("messaging.message.id"), send.field("cairnq.task.name")), (task.id.as_str(), "fired"));
    let traceparent = format!("00-{}-{}-01", send.field("trace_id"), send.field("span_id"));
    assert_eq!(task.metadata.to_value().expect("json")[TRACEPARENT], json!(traceparent));
    assert_counts(recorder, &client, &name, 1, 10).await;

    client.trigger_schedule(&name).await.expect("trigger").expect("exists");
    assert!(client.fire_due_schedules().await.expect("fire").fired.is_empty(), "nothing due");
    assert_counts(recorder, &client, &name, 2, 10).await;
}

/// `fires` fires (and as many submitted tasks) and `missed` misses counted
/// for the schedule `name`, whose tasks `fired` go to queue `name`.
async fn assert_counts(
    recorder: &crate::telemetry::CountingRecorder,
    client: &CairnQ,
    name: &str,
    fires: u64,
    missed: u64,
) {
    let schedule = [("schedule", name)];
    assert_eq!(recorder.counter(SCHEDULE_FIRES, &schedule), fires, "fires");
    assert_eq!(recorder.counter(SCHEDULE_MISSED, &schedule), missed, "misses");
    assert_eq!(recorder.counter(TASKS_SUBMITTED, &[("queue", name), ("name", "fired")]), fires, "submitted");
    assert_eq!(count_named(client, "fired").await as u64, fires, "the tasks are there");
}
