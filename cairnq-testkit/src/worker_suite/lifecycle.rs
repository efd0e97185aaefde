//! Leases across crashes and stops, with real processes: a worker killed
//! with SIGKILL mid-task, a worker drained by SIGTERM, and cancellation
//! winning on every path a running task can end by.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, TaskSpec, TaskStatus};
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::support::{count, eventually, finished, fresh, now_ms, quick_options, session, some, start};
use crate::BackendFactory;
use crate::child::{ChildArgs, ChildMode, ChildProcess};

/// Far longer than a child takes to start or to drain.
const CHILD_PATIENCE: Duration = Duration::from_secs(60);

/// A worker process killed with SIGKILL mid-task: after its lease expires a
/// second worker runs the task again — attempt 2, succeeded, result written
/// once. Skipped (with a message) when the factory gives no locator.
pub async fn a_killed_worker_is_recovered_after_its_lease(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let task = client.submit("crash", &json!({})).await.expect("submit");
    let mut args = ChildArgs::new(locator, ChildMode::Hang);
    args.lease_ms = 500;
    let mut child = ChildProcess::spawn(&args).expect("start the child worker");
    let started = child.line_starting("started ", CHILD_PATIENCE).await.expect("the child starts the task");
    assert_eq!(started, format!("started {}", task.id));
    child.kill().expect("SIGKILL the child");
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let _worker = start(&client, quick_options(), move |w| {
        w.task("crash", move |ctx: TaskContext, _: Value| {
            r.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, TaskError>(json!({"attempt": ctx.attempt()})) }
        })
        .expect("register");
    });
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Succeeded, 2));
    assert_eq!(done.result, some(json!({"attempt": 2})));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second worker ran it exactly once");
}

/// SIGTERM while 50 tasks run in a child worker: it stops claiming, lets
/// the short ones finish within the drain timeout, abandons the long ones
/// and exits 0; once a lease length has passed, no task is running with a
/// live lease, and the finished ones are succeeded.
pub async fn sigterm_drains_then_abandons(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let specs: Vec<_> =
        (0..50).map(|i| TaskSpec::new("sleep", &json!({"ms": if i % 2 == 0 { 500 } else { 60_000 }}))).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let mut args = ChildArgs::new(locator, ChildMode::Sleep);
    (args.concurrency, args.lease_ms, args.drain_ms) = (50, 1_000, 1_500);
    let mut child = ChildProcess::spawn(&args).expect("start the child worker");
    eventually("all 50 tasks run", || async { count(&client, TaskStatus::Running).await == 50 }).await;
    let (status, lines) = child.stop(CHILD_PATIENCE).await.expect("the child exits after SIGTERM");
    assert!(status.success(), "the child exited with {status}: {lines:?}");
    assert_eq!(count(&client, TaskStatus::Succeeded).await, 25, "the short tasks finished during the drain");
    tokio::time::sleep(Duration::from_millis(args.lease_ms + 50)).await;
    let running = client.list(&cairnq_core::ListFilter::new().status(TaskStatus::Running)).await.expect("list");
    assert_eq!(running.tasks.len(), 25, "the abandoned tasks still read running until a claim recovers them");
    let now = now_ms();
    assert!(running.tasks.iter().all(|t| t.lease_until_ms.is_some_and(|l| l <= now)), "a lease outlived its worker");
}

/// A second SIGTERM during a drain stops the worker at once. The first
/// makes a child worker whose handler hangs report that it drains, and the
/// handler keeps running through the drain (its lease is still renewed
/// three lease lengths later, the child still alive). The second makes the
/// child exit, reporting the abandoned call, long before its ten-minute
/// drain timeout, with the task left `running` in the database; once the
/// lease expires, another worker recovers it as attempt 2.
pub async fn a_second_sigterm_stops_at_once(factory: &dyn BackendFactory) {
    a_second_signal_stops_at_once(factory, "TERM").await;
}

/// [`a_second_sigterm_stops_at_once`] with SIGINT (Ctrl-C): the first
/// drains, the second stops at once.
pub async fn a_second_sigint_stops_at_once(factory: &dyn BackendFactory) {
    a_second_signal_stops_at_once(factory, "INT").await;
}

async fn a_second_signal_stops_at_once(factory: &dyn BackendFactory, signal: &str) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let task = client.submit("crash", &json!({})).await.expect("submit");
    let mut args = ChildArgs::new(locator, ChildMode::Hang);
    (args.lease_ms, args.drain_ms, args.report_issues) = (500, 600_000, true);
    let mut child = ChildProcess::spawn(&args).expect("start the child worker");
    let started = child.line_starting("started ", CHILD_PATIENCE).await.expect("the child starts the task");
    assert_eq!(started, format!("started {}", task.id));
    child.signal(signal).expect("the first signal");
    child.line_starting("issue stopping", CHILD_PATIENCE).await.expect("the child reports that it drains");
    tokio::time::sleep(Duration::from_millis(3 * args.lease_ms)).await;
    assert!(child.try_wait().expect("try_wait").is_none(), "the child left before its drain timeout");
    let draining = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(draining.status, TaskStatus::Running);
    assert!(draining.lease_until_ms.is_some_and(|l| l > now_ms()), "the drain keeps the running call's lease");
    child.signal(signal).expect("the second signal");
    let status = child.wait(CHILD_PATIENCE).await.expect("the second signal ends the child at once");
    let lines = child.rest().await;
    assert!(status.success(), "the child exited with {status}: {lines:?}");
    assert!(lines.iter().any(|l| l.contains("abandoned 1 handler call(s) to stop at once")), "{lines:?}");
    let left = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!((left.status, left.attempt), (TaskStatus::Running, 1), "left running, to its lease");
    let _worker = start(&client, quick_options(), |w| {
        w.task("crash", |ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>(ctx.attempt()) })
            .expect("register");
    });
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt, done.result), (TaskStatus::Succeeded, 2, some(json!(2))));
}

/// A cancel wins on every path: queued (never runs), running then returned,
/// running then failed retryably, running then lease expired.
pub async fn cancel_wins_on_every_path(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let queued = client.submit("never", &json!({})).delay(Duration::from_millis(60_000)).await.expect("submit");
    client.cancel(&queued.id).await.expect("cancel");
    let started = Arc::new(Notify::new());
    let returned = Arc::new(AtomicUsize::new(0));
    let (s, r) = (started.clone(), returned.clone());
    let _worker = start(&client, quick_options().concurrency(4), move |w| {
        w.task("wait_cancel", move |ctx: TaskContext, fail: bool| {
            let (s, r) = (s.clone(), r.clone());
            async move {
                s.notify_one();
                ctx.on_cancel().await;
                r.fetch_add(1, Ordering::SeqCst);
                if fail { Err(TaskError::new("stopping")) } else { Ok("finished anyway") }
            }
        })
        .expect("register");
    });
    for (fail, returns) in [(false, 1), (true, 2)] {
        let task = client.submit("wait_cancel", &fail).await.expect("submit");
        started.notified().await;
        client.cancel(&task.id).await.expect("cancel");
        let done = finished(&client, &task.id).await;
        assert_eq!((done.status, done.attempt, done.result.clone()), (TaskStatus::Canceled, 1, None), "fail={fail}");
        assert_eq!(returned.load(Ordering::SeqCst), returns, "the handler saw the cancel and returned");
        let recorded = done.error_envelope().map(|e| e.message);
        assert_eq!(recorded, fail.then(|| "stopping".to_string()), "a cancel-won fail still records its error");
    }
    assert_eq!(
        client.get(&queued.id).await.expect("get").map(|t| (t.status, t.attempt)),
        Some((TaskStatus::Canceled, 0))
    );
    cancel_wins_over_lease_expiry(&client).await;
}

/// A worker that stopped heartbeating (claimed by hand and left alone):
/// its lease expires, the cancel requested meanwhile wins when a live
/// worker's claim recovers the lease, and the dead worker's late result is
/// refused.
async fn cancel_wins_over_lease_expiry(client: &CairnQ) {
    let task = client.submit("orphan", &json!({})).await.expect("submit");
    let dead = session(client, "dead-worker", Duration::from_millis(300));
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["orphan".into()]).limit(1);
    assert_eq!(dead.claim(vec![draw], vec![]).await.expect("claim").len(), 1);
    client.cancel(&task.id).await.expect("cancel");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let _worker = start(client, quick_options(), |w| {
        w.task("orphan", |_ctx: TaskContext, _: Value| async move { Ok::<_, TaskError>("must not run") })
            .expect("register");
    });
    let done = finished(client, &task.id).await;
    assert_eq!((done.status, done.attempt, done.result.clone()), (TaskStatus::Canceled, 1, None));
    let late = dead.complete(&task.id, json!("too late")).await;
    assert!(matches!(late, Err(cairnq_core::Error::LostLease { .. })), "{late:?}");
}

/// A stopped worker drains and returns, then claims nothing more; a worker
/// refuses to run twice at once and to run without handlers.
pub async fn a_stopped_worker_claims_nothing_more(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let mut idle = cairnq_worker::Worker::new(client.clone(), quick_options()).expect("options");
    assert!(matches!(idle.run().await, Err(cairnq_core::Error::Validation { field: "handlers", .. })));
    idle.task("t", |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n) }).expect("register");
    let worker = Arc::new(idle);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run().await }
    });
    let first = client.submit("t", &1).await.expect("submit");
    assert_eq!(finished(&client, &first.id).await.status, TaskStatus::Succeeded);
    assert!(matches!(worker.run().await, Err(cairnq_core::Error::Validation { field: "worker", .. })));
    worker.stop();
    running.await.expect("the run task").expect("run returns after the stop");
    let second = client.submit("t", &2).await.expect("submit");
    tokio::time::sleep(quick_options().poll_interval * 8).await;
    let untouched = client.get(&second.id).await.expect("get").expect("exists");
    assert_eq!((untouched.status, untouched.attempt), (TaskStatus::Queued, 0));
}

/// A worker process suspended (SIGSTOP) past its lease, while another
/// claimer recovers the task, reports on waking that it lost that task's
/// lease, by id, not only that its runtime was late; the task ends as the
/// other claimer settles it.
pub async fn a_suspended_worker_reports_its_lost_leases(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let task = client.submit("crash", &json!({})).await.expect("submit");
    let mut args = ChildArgs::new(locator, ChildMode::Hang);
    (args.lease_ms, args.report_issues) = (400, true);
    let mut child = ChildProcess::spawn(&args).expect("start the child worker");
    let started = child.line_starting("started ", CHILD_PATIENCE).await.expect("the child starts the task");
    assert_eq!(started, format!("started {}", task.id));
    child.signal("STOP").expect("SIGSTOP the child");
    let rescuer = session(&client, "rescuer", Duration::from_secs(60));
    let mut rescued = Vec::new();
    for _ in 0..100 {
        rescued = rescuer.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(1)], vec![]).await.expect("claim");
        if !rescued.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rescued.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [task.id.as_str()], "lease recovered");
    child.signal("CONT").expect("SIGCONT the child");
    let report = tokio::time::timeout(CHILD_PATIENCE, async {
        loop {
            match child.next_line(CHILD_PATIENCE).await {
                Ok((_, line)) if line.contains("lost the lease") => return Ok(line),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
    });
    let report = report.await.expect("a report in time").expect("the child reports the lost lease");
    assert!(report.contains(&task.id), "{report}");
    rescuer.complete(&task.id, json!("rescued")).await.expect("the rescuer settles");
    let (status, lines) = child.stop(CHILD_PATIENCE).await.expect("the child exits after SIGTERM");
    assert!(status.success(), "the child exited with {status}: {lines:?}");
}
