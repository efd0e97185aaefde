//! How a handler's ending becomes the task's outcome: retries inside the
//! backoff windows, exhausted attempts, panics, missing handlers, results
//! JSON cannot hold, `max_run`, and what a context can do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnq_core::{Backoff, Error, TaskDef, TaskStatus, codes};
use cairnq_worker::{TaskContext, TaskError, WorkerIssue, WorkerOptions};
use serde_json::{Value, json};
use std::sync::Mutex;

use super::support::{count, eventually, finished, fresh, now_ms, quick_options, some, start};
use crate::BackendFactory;

/// A handler failing twice then succeeding ends succeeded on attempt 3, and
/// each requeue's `run_at` lies inside that attempt's backoff window.
pub async fn retries_follow_the_backoff_windows(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    // Windows of 1 s and 2 s: wide against the write latency a loaded
    // machine adds to the measured delay.
    let (base, cap) = (Duration::from_millis(1_000), Duration::from_millis(10_000));
    // (attempt, run_at of the claimed row, when the handler failed)
    let seen: Arc<Mutex<Vec<(u32, i64, i64)>>> = Arc::default();
    let options = quick_options().backoff(base, cap);
    let log = seen.clone();
    let _worker = start(&client, options, move |w| {
        w.task("flaky", move |ctx: TaskContext, _: Value| {
            let log = log.clone();
            async move {
                log.lock().expect("lock").push((ctx.attempt(), ctx.task().run_at_ms, now_ms()));
                if ctx.attempt() < 3 { Err(TaskError::retryable("not yet")) } else { Ok(ctx.attempt()) }
            }
        })
        .expect("register");
    });
    let task = client.submit("flaky", &json!({})).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Succeeded, 3));
    assert_eq!(done.result, some(json!(3)));
    let seen = seen.lock().expect("lock").clone();
    let backoff = Backoff::new(base, cap);
    for pair in seen.windows(2) {
        let (failed_attempt, _, failed_at) = pair[0];
        let (_, run_at, _) = pair[1];
        let window = i64::try_from(backoff.window(failed_attempt).as_millis()).unwrap_or(0);
        let delay = run_at - failed_at;
        // The failure was written a little after `failed_at`: allow that much
        // above the window, never anything below its lower half.
        assert!(
            delay >= window / 2 && delay < window + 400,
            "attempt {failed_attempt}: delay {delay} ms, window {window}"
        );
    }
    assert_eq!(seen.len(), 3);
}

/// A handler that always fails ends failed once attempts are used up, with
/// the envelope of its error type.
pub async fn exhausted_attempts_fail_with_the_envelope(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options(), |w| {
        w.task("broken", |_ctx: TaskContext, _: Value| async move {
            Err::<Value, _>(std::io::Error::other("disk on fire"))
        })
        .expect("register");
    });
    let task = client.submit("broken", &json!({})).max_attempts(2).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Failed, 2));
    match cairnq_core::task_outcome(done) {
        Err(Error::TaskFailed { error_type, code, message, .. }) => {
            assert_eq!((error_type.as_str(), code.as_str()), ("Error", codes::HANDLER_ERROR));
            assert_eq!(message, "disk on fire");
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
}

/// A panicking handler records a retryable envelope naming the panic, and
/// the worker keeps serving.
pub async fn a_panic_fails_the_attempt_and_the_worker_keeps_serving(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options(), |w| {
        w.task("explode", |_ctx: TaskContext, _: Value| async move { explode() }).expect("register");
        w.task("fine", |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n + 1) }).expect("register");
    });
    let boom = client.submit("explode", &json!({})).max_attempts(1).await.expect("submit");
    let done = finished(&client, &boom.id).await;
    assert_eq!(done.status, TaskStatus::Failed);
    let envelope = done.error_envelope().expect("an error envelope");
    assert_eq!((envelope.error_type.as_str(), envelope.code.as_str()), ("Panic", codes::HANDLER_ERROR));
    assert!(envelope.retryable && envelope.message.contains("kaboom"), "{envelope:?}");
    let next = client.submit("fine", &41).await.expect("submit");
    assert_eq!(finished(&client, &next.id).await.result, some(json!(42)));
}

fn explode() -> Result<(), TaskError> {
    panic!("kaboom")
}

/// With `claim_unknown_names`, a claimed name without a handler fails
/// permanently as `no_handler` on its first attempt.
pub async fn an_unknown_name_fails_as_no_handler(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options().claim_unknown_names(true), |w| {
        w.task("known", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(()) }).expect("register");
    });
    let task = client.submit("unknown", &json!({})).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Failed, 1));
    let envelope = done.error_envelope().expect("an envelope");
    assert_eq!((envelope.code.as_str(), envelope.retryable), (codes::NO_HANDLER, false));
}

/// A worker claims only the names it has handlers for.
pub async fn only_registered_names_are_claimed(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let other = client.submit("someone_elses", &json!({})).await.expect("submit");
    let _worker = start(&client, quick_options(), |w| {
        w.task("mine", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(()) }).expect("register");
    });
    let mine = client.submit("mine", &json!({})).await.expect("submit");
    assert_eq!(finished(&client, &mine.id).await.status, TaskStatus::Succeeded);
    let untouched = client.get(&other.id).await.expect("get").expect("exists");
    assert_eq!((untouched.status, untouched.attempt), (TaskStatus::Queued, 0));
}

/// A result JSON cannot hold (NaN) fails permanently as
/// `unserializable_result`, even with attempts left.
pub async fn an_unserializable_result_fails_permanently(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options(), |w| {
        w.task("nan", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(vec![f64::NAN]) })
            .expect("register");
    });
    let task = client.submit("nan", &json!({})).max_attempts(3).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Failed, 1));
    let envelope = done.error_envelope().expect("an envelope");
    assert_eq!((envelope.code.as_str(), envelope.retryable), (codes::UNSERIALIZABLE_RESULT, false));
}

/// A handler that never returns is failed as `handler_timeout` within
/// `max_run` plus one heartbeat interval, sees its lease as lost, and the
/// worker keeps serving.
pub async fn max_run_abandons_a_hung_handler(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let max_run = Duration::from_millis(400);
    let options = quick_options().max_run(max_run);
    let heartbeat = options.heartbeat_interval();
    let hung = Arc::new(Hung::default());
    let seen = hung.clone();
    let _worker = start(&client, options, move |w| {
        w.task("hang", move |ctx: TaskContext, _: Value| {
            *seen.began.lock().expect("lock") = Some((now_ms(), Instant::now(), ctx));
            let dropped = Dropped(seen.clone());
            async move {
                let _dropped = dropped;
                std::future::pending::<Result<(), TaskError>>().await
            }
        })
        .expect("register");
        w.task("fine", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>("ok") }).expect("register");
    });
    let task = client.submit("hang", &json!({})).max_attempts(1).await.expect("submit");
    let done = finished(&client, &task.id).await;
    let (began_ms, began, ctx) = hung.began.lock().expect("lock").clone().expect("the handler started");
    assert_eq!(done.status, TaskStatus::Failed);
    let envelope = done.error_envelope().expect("an envelope");
    assert_eq!((envelope.code.as_str(), envelope.retryable), (codes::HANDLER_TIMEOUT, true));
    // Not before max_run: measured on the monotonic clock the limit runs
    // on (the wall clock a fresh machine slews can make 400 ms read 397).
    let abandoned = hung.dropped.lock().expect("lock").expect("the hung call was dropped");
    assert!(abandoned.duration_since(began) >= max_run, "abandoned after {:?}", abandoned.duration_since(began));
    // Written within max_run plus one heartbeat interval; the slack above
    // it covers the failure's own write on a loaded machine.
    let took = Duration::from_millis(u64::try_from(done.completed_at_ms.unwrap_or(0) - began_ms).unwrap_or(0));
    let ceiling = max_run + heartbeat + Duration::from_millis(400);
    assert!(took <= ceiling, "failed after {took:?} (max_run {max_run:?}, ceiling {ceiling:?})");
    assert!(ctx.lost_lease(), "the abandoned attempt's context reads as lease-lost");
    let next = client.submit("fine", &json!({})).await.expect("submit");
    assert_eq!(finished(&client, &next.id).await.status, TaskStatus::Succeeded);
}

/// What the hung handler saw: when it began (wall and monotonic) with its
/// context, and when the worker dropped its call.
#[derive(Default)]
struct Hung {
    began: Mutex<Option<(i64, Instant, TaskContext)>>,
    dropped: Mutex<Option<Instant>>,
}

/// Notes the moment the worker gives up on (drops) the hung call.
struct Dropped(Arc<Hung>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Ok(mut dropped) = self.0.dropped.lock() {
            dropped.get_or_insert_with(Instant::now);
        }
    }
}

/// Blocking handlers run off the runtime's threads: on a current-thread
/// runtime, handlers sleeping synchronously for longer than the lease still
/// get their leases renewed, and no blocked runtime is reported. (Call it
/// from a current-thread test to make it meaningful.)
pub async fn blocking_handlers_do_not_block_the_runtime(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let (issues, options) = watching_for_blocked_runtime();
    let _worker = start(&client, options.concurrency(2), |w| {
        w.blocking_task("cpu", |ctx: TaskContext, ms: u64| {
            std::thread::sleep(Duration::from_millis(ms));
            Ok::<_, TaskError>(ctx.lost_lease())
        })
        .expect("register");
    });
    let tasks =
        [client.submit("cpu", &1_500).await.expect("submit"), client.submit("cpu", &1_500).await.expect("submit")];
    for task in tasks {
        let done = finished(&client, &task.id).await;
        assert_eq!((done.status, done.attempt, done.result), (TaskStatus::Succeeded, 1, some(json!(false))));
    }
    let reported = issues.lock().expect("lock").clone();
    assert!(reported.is_empty(), "blocked runtime reported: {reported:?}");
}

/// The counterpart: synchronous sleep inside an async handler on a
/// current-thread runtime stalls the heartbeat, and the worker reports a
/// blocked runtime. (Call it from a current-thread test.)
pub async fn a_blocked_runtime_is_reported(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let (issues, options) = watching_for_blocked_runtime();
    let _worker = start(&client, options, |w| {
        w.task("stall", |_ctx: TaskContext, ms: u64| async move {
            std::thread::sleep(Duration::from_millis(ms));
            Ok::<_, TaskError>(())
        })
        .expect("register");
    });
    client.submit("stall", &1_500).await.expect("submit");
    eventually("a blocked runtime is reported", || async { !issues.lock().expect("lock").is_empty() }).await;
}

/// Options (a 1200 ms lease: a tick 400 ms late is a blocked runtime) whose
/// `on_error` collects blocked-runtime reports.
fn watching_for_blocked_runtime() -> (Arc<Mutex<Vec<String>>>, WorkerOptions) {
    let issues: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = issues.clone();
    let options = quick_options().lease(Duration::from_millis(1_200)).on_error(move |issue| {
        if matches!(issue, WorkerIssue::BlockedRuntime { .. }) {
            sink.lock().expect("lock").push(issue.to_string());
        }
    });
    (issues, options)
}

/// The child task of the context test: answers who its parent and root are.
const CHILD: TaskDef<u32, Value> = TaskDef::new("child");

/// Progress is recorded (a message alone leaves the value as it was),
/// typed children are submitted with parent, root and correlation wired,
/// and a handler may wait for them.
pub async fn a_context_reports_progress_and_submits_children(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options().concurrency(2), |w| {
        w.task("parent", |ctx: TaskContext, _: Value| async move {
            ctx.progress(0.5).message("spawning").await?;
            ctx.message("waiting for the child").await?;
            let own = ctx.client().get(ctx.task_id()).await?.expect("its own row");
            let child = ctx.submit(CHILD, &1).await?;
            let done = ctx.wait(&child.id, &cairnq_core::WaitOptions::default()).await?;
            let typed: Value = ctx.submit(CHILD, &2).call(Duration::from_secs(15)).await?;
            Ok::<_, TaskError>(json!({
                "child": child.id, "child_result": done.result, "typed": typed,
                "progress": own.progress, "message": own.message,
            }))
        })
        .expect("register");
        w.task(CHILD, |ctx: TaskContext, _: u32| async move {
            Ok::<_, TaskError>(json!({"parent": ctx.parent_id(), "root": ctx.root_id()}))
        })
        .expect("register");
    });
    let parent = client.submit("parent", &json!({})).correlation_id("order-7").await.expect("submit");
    let done = finished(&client, &parent.id).await;
    assert_eq!(done.status, TaskStatus::Succeeded);
    let result = done.result.expect("a result").to_value().expect("JSON");
    assert_eq!(result["child_result"], json!({"parent": parent.id, "root": parent.id}));
    assert_eq!(result["typed"], json!({"parent": parent.id, "root": parent.id}), "a typed call of a child");
    assert_eq!((&result["progress"], &result["message"]), (&json!(0.5), &json!("waiting for the child")));
    let child_id = result["child"].as_str().expect("a child id").to_string();
    let child = client.get(&child_id).await.expect("get").expect("exists");
    assert_eq!(child.correlation_id.as_deref(), Some("order-7"));
    assert_eq!(count(&client, TaskStatus::Succeeded).await, 3);
    assert_eq!(done.progress, Some(1.0), "succeeded tasks read progress 1.0");
}
