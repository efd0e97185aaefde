//! What a handler says decides what happens to its task, the way the other
//! cairnq SDKs decide it: a `TaskError` the handler builds is permanent
//! unless it says retryable, `ctx.fail(reason)` retries like Python's
//! default, a batch item whose payload does not decode fails alone, a
//! cancel is seen through `ctx.canceled()` long before the next heartbeat,
//! and a context whose lease is lost submits no children.

use std::time::Duration;

use cairnq_core::{Error, Json, ListFilter, TaskDef, TaskStatus, WaitOptions};
use cairnq_worker::{BatchItem, TaskContext, TaskError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::support::{eventually, finished, fresh, quick_options, some, start};
use crate::BackendFactory;

/// How a handler fails, by name.
const FAILS: TaskDef<String, ()> = TaskDef::new("fails");

/// Each way of failing, on a task allowed three attempts: the attempts it
/// took and whether its last envelope says retryable.
pub async fn handler_failures_follow_the_sdk_defaults(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options().concurrency(4), |w| {
        w.task(FAILS, |ctx: TaskContext, how: String| async move {
            match how.as_str() {
                "new" => Err(TaskError::new("card declined")),
                "retryable" => Err(TaskError::retryable("rate limited")),
                "question_mark" => Err(std::io::Error::other("disk on fire").into()),
                "fail" => ctx.fail("upstream down").await.map(drop).map_err(TaskError::from),
                "fail_with_new" => {
                    ctx.fail_with(TaskError::new("no source records")).await.map(drop).map_err(Into::into)
                }
                other => panic!("unknown way to fail: {other}"),
            }
        })
        .expect("register");
    });
    let expected = [
        ("new", 1, false),
        ("retryable", 3, true),
        ("question_mark", 3, true),
        ("fail", 3, true),
        ("fail_with_new", 1, false),
    ];
    for (how, attempts, retryable) in expected {
        let task = FAILS.submit(&client, &how.to_string()).max_attempts(3).await.expect("submit");
        let done = finished(&client, &task.id).await;
        let envelope = done.error_envelope().expect("an envelope");
        assert_eq!((done.status, done.attempt, envelope.retryable), (TaskStatus::Failed, attempts, retryable), "{how}");
    }
}

/// Numbers in, doubled out, in batches.
const DOUBLE: TaskDef<i64, i64> = TaskDef::new("double");

/// A batch task whose payload does not decode into the handler's type
/// fails on its own, permanently, without reaching the handler; the others
/// get their typed results.
pub async fn a_batch_item_that_does_not_decode_fails_alone(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let good = [DOUBLE.submit(&client, &1).await.expect("submit"), DOUBLE.submit(&client, &2).await.expect("submit")];
    let bad = client.submit("double", &json!("not a number")).await.expect("submit");
    let _worker = start(&client, quick_options(), |w| {
        w.batch_task(DOUBLE, 8, |batch: Vec<BatchItem<i64>>| async move {
            assert!(batch.len() <= 2, "the undecodable task never reaches the handler");
            Ok::<_, TaskError>(
                batch.into_iter().map(|item| (item.ctx.task_id().to_string(), item.payload * 2)).collect::<Vec<_>>(),
            )
        })
        .expect("register");
    });
    for (task, want) in good.iter().zip([2, 4]) {
        assert_eq!(finished(&client, &task.id).await.result, some(json!(want)));
    }
    let failed = finished(&client, &bad.id).await;
    let envelope = failed.error_envelope().expect("an envelope");
    assert_eq!((failed.status, failed.attempt, envelope.retryable), (TaskStatus::Failed, 1, false));
}

/// With a two-minute lease the heartbeat answers every 40 s, yet a handler
/// polling `ctx.canceled()` sees a cancel within about a second (it reads
/// the row once the heartbeat's answer is a second old), so the task ends
/// canceled within the suite's patience, long before a heartbeat.
pub async fn canceled_reads_the_store_when_the_heartbeat_is_stale(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let options = quick_options().lease(Duration::from_secs(120));
    let _worker = start(&client, options, |w| {
        w.task("patient", |ctx: TaskContext, _: Value| async move {
            while !ctx.canceled().await {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok::<_, TaskError>("stopped")
        })
        .expect("register");
    });
    let task = client.submit("patient", &json!({})).await.expect("submit");
    eventually("the task is running", || async {
        client.get(&task.id).await.ok().flatten().is_some_and(|t| t.status == TaskStatus::Running)
    })
    .await;
    client.cancel(&task.id).await.expect("cancel");
    let wait = WaitOptions::new().timeout(Duration::from_secs(15));
    let done = client.wait(&task.id, &wait).await.expect("canceled long before the next heartbeat");
    assert_eq!(done.status, TaskStatus::Canceled);
}

/// A handler that reports progress every 100 ms while it awaits
/// `on_cancel()` hears of a cancel from the row its next report returns:
/// with the heartbeat every 30 s (a two-minute lease), the task ends
/// canceled within 10 s of the cancel, long before the first heartbeat
/// could have told it.
pub async fn a_progress_report_carries_a_cancel_home(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let heartbeat = Duration::from_secs(30);
    let options = quick_options().lease(Duration::from_secs(120)).heartbeat(heartbeat);
    let _worker = start(&client, options, |w| {
        w.task("busy", |ctx: TaskContext, _: Value| async move {
            let cancel = ctx.on_cancel();
            tokio::pin!(cancel);
            loop {
                tokio::select! {
                    () = &mut cancel => return Ok::<_, TaskError>("stopped"),
                    () = tokio::time::sleep(Duration::from_millis(100)) => ctx.progress(0.5).await?,
                }
            }
        })
        .expect("register");
    });
    let task = client.submit("busy", &json!({})).await.expect("submit");
    eventually("the handler reports progress", || async {
        client.get(&task.id).await.ok().flatten().is_some_and(|t| t.progress.is_some())
    })
    .await;
    client.cancel(&task.id).await.expect("cancel");
    let wait = WaitOptions::new().timeout(heartbeat / 3);
    let done = client.wait(&task.id, &wait).await.expect("canceled long before the first heartbeat");
    assert_eq!(done.status, TaskStatus::Canceled);
}

/// Once a context's lease is lost (here: the attempt outran `max_run` and
/// was abandoned), its child submits are refused with `LostLease` and
/// write nothing, as in the Python SDK: another attempt will submit them.
/// The check is made when the submit is awaited, so one built while the
/// lease was live is refused too.
pub async fn a_context_that_lost_its_lease_submits_no_children(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let (contexts, mut started) = mpsc::unbounded_channel();
    let _worker = start(&client, quick_options().max_run(Duration::from_millis(300)), move |w| {
        w.task("parent", move |ctx: TaskContext, _: Value| {
            let _ = contexts.send(ctx);
            std::future::pending::<Result<(), TaskError>>()
        })
        .expect("register");
    });
    let parent = client.submit("parent", &json!({})).max_attempts(1).await.expect("submit");
    let ctx = tokio::time::timeout(Duration::from_secs(30), started.recv()).await.expect("started").expect("a context");
    let built_early = ctx.submit_named("child", &1);
    assert_eq!(finished(&client, &parent.id).await.status, TaskStatus::Failed, "abandoned after max_run");
    assert!(ctx.lost_lease());
    for refused in [built_early.await, ctx.submit_named("child", &2).await] {
        assert!(matches!(&refused, Err(Error::LostLease { task_id, .. }) if *task_id == parent.id), "{refused:?}");
    }
    let children = client.list(&ListFilter::new().name("child")).await.expect("list");
    assert!(children.tasks.is_empty(), "no child was written: {:?}", children.tasks);
}

/// A payload nested 1,000 levels deep (serde_json alone stops at 128; the
/// Python SDK writes and reads about 1,000) reaches a handler typed on
/// `serde_json::Value`, and the same value comes back as its result.
pub async fn a_value_handler_takes_a_payload_nested_a_thousand_levels(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options(), |w| {
        w.task("echo", |_ctx: TaskContext, payload: Value| async move { Ok::<_, TaskError>(payload) })
            .expect("register");
    });
    let depth = 1_000;
    let text = format!("{}\"core\"{}", "[".repeat(depth), "]".repeat(depth));
    let payload = Json::parse(text).expect("valid JSON");
    let task = client.submit("echo", &payload).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
    assert_eq!(done.result, Some(payload), "the value came back whole");
}
