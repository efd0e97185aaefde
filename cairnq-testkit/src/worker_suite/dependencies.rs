//! Task dependencies (`SubmitOptions::after`): a diamond of typed tasks run
//! by a real worker, the failure policy both ways, the refusal of an
//! unknown dependency, and the rules for cancel, retry and purge around a
//! waiting task. The release is the store's (a trigger on SQL backends),
//! so these hold for whichever process settles the dependency.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, DependencyFailure, ErrorEnvelope, ErrorKind, PurgeFilter, Task, TaskDef, TaskStatus, WAITING_RUN_AT_MS,
    WorkerSession, codes, is_waiting,
};
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};

use super::support::{eventually, finished, fresh, quick_options, session, start};
use crate::BackendFactory;

const A: TaskDef<u32, u32> = TaskDef::new("diamond_a");
const B: TaskDef<u32, u32> = TaskDef::new("diamond_b");
const C: TaskDef<u32, u32> = TaskDef::new("diamond_c");
const D: TaskDef<(), Value> = TaskDef::new("diamond_d");

/// When each handler started and ended.
type Log = Arc<Mutex<Vec<(&'static str, &'static str, Instant)>>>;

fn note(log: &Log, name: &'static str, what: &'static str) {
    log.lock().expect("log").push((name, what, Instant::now()));
}

fn at(log: &Log, name: &str, what: &str) -> Instant {
    let log = log.lock().expect("log");
    log.iter().find(|(n, w, _)| *n == name && *w == what).map(|(_, _, t)| *t).expect("the handler ran")
}

/// A diamond (A; B and C after A; D after B and C) of typed tasks, run by
/// one worker with room for all four at once: no handler starts before
/// every dependency's handler ended, each sees its dependencies' results
/// typed, and D's rows list B then C, as its submit named them. While A
/// runs, the others wait ("waiting for 2 of 2 tasks" for D).
pub async fn a_diamond_runs_in_dependency_order_and_joins_results(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let log: Log = Arc::default();
    let (la, lb, lc, ld) = (log.clone(), log.clone(), log.clone(), log.clone());
    let a = A.submit(&client, &1).await.expect("submit A");
    let b = B.submit(&client, &10).after([&a.id]).await.expect("submit B");
    let c = C.submit(&client, &100).after([&a.id]).await.expect("submit C");
    let d = D.submit(&client, &()).after([&b.id, &c.id]).await.expect("submit D");
    for waiting in [&b, &c, &d] {
        assert!(is_waiting(waiting), "{} waits for its dependencies", waiting.name);
        assert_eq!(waiting.run_at_ms, WAITING_RUN_AT_MS);
    }
    let wait = client.task_wait(&d.id).await.expect("task_wait").expect("D has a wait");
    assert_eq!(wait.describe().as_deref(), Some("waiting for 2 of 2 tasks"));
    assert!(client.task_wait(&a.id).await.expect("task_wait").is_none(), "A waits for nothing");

    let _worker = start(&client, quick_options().concurrency(4), move |w| {
        w.task(A, move |_ctx: TaskContext, x: u32| {
            let log = la.clone();
            async move {
                note(&log, "a", "start");
                tokio::time::sleep(Duration::from_millis(300)).await;
                note(&log, "a", "end");
                Ok::<_, TaskError>(x + 1)
            }
        })
        .expect("register A");
        w.task(B, move |ctx: TaskContext, x: u32| {
            let log = lb.clone();
            async move {
                note(&log, "b", "start");
                let from_a = ctx.dependency_results(A).await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
                note(&log, "b", "end");
                Ok::<_, TaskError>(from_a.iter().sum::<u32>() * x)
            }
        })
        .expect("register B");
        w.task(C, move |ctx: TaskContext, x: u32| {
            let log = lc.clone();
            async move {
                note(&log, "c", "start");
                let from_a = ctx.dependency_results(A).await?;
                tokio::time::sleep(Duration::from_millis(150)).await;
                note(&log, "c", "end");
                Ok::<_, TaskError>(from_a.iter().sum::<u32>() * x)
            }
        })
        .expect("register C");
        w.task(D, move |ctx: TaskContext, _: ()| {
            let log = ld.clone();
            async move {
                note(&log, "d", "start");
                let rows = ctx.dependencies().await?;
                let names: Vec<String> = rows.iter().map(|t| t.name.clone()).collect();
                let statuses: Vec<&str> = rows.iter().map(|t| t.status.as_str()).collect();
                let b = ctx.dependency_results(B).await?;
                let c = ctx.dependency_results(C).await?;
                note(&log, "d", "end");
                Ok::<_, TaskError>(json!({"names": names, "statuses": statuses, "b": b, "c": c}))
            }
        })
        .expect("register D");
    });

    let done = finished(&client, &d.id).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "D: {:?}", done.error);
    let result = D.result_of(done).expect("D's result");
    assert_eq!(
        result,
        json!({"names": ["diamond_b", "diamond_c"], "statuses": ["succeeded", "succeeded"], "b": [20], "c": [200]})
    );
    assert!(at(&log, "b", "start") >= at(&log, "a", "end"), "B started before A ended");
    assert!(at(&log, "c", "start") >= at(&log, "a", "end"), "C started before A ended");
    assert!(at(&log, "d", "start") >= at(&log, "b", "end"), "D started before B ended");
    assert!(at(&log, "d", "start") >= at(&log, "c", "end"), "D started before C ended");
    let wait = client.task_wait(&d.id).await.expect("task_wait").expect("D had a wait");
    assert_eq!((wait.total, wait.remaining, wait.waiting, wait.describe()), (2, 0, false, None));
}

const FLAKY: TaskDef<(), ()> = TaskDef::new("dependency_fails");
const AFTER: TaskDef<(), Value> = TaskDef::new("dependency_after");

/// A failed dependency cancels a dependent with the default policy (the
/// envelope names it and how it ended), and the tasks waiting for that one
/// in turn (naming their own dependency, canceled); with `Run` the
/// dependent runs once all have ended and sees the failure in its rows.
pub async fn a_failed_dependency_cancels_or_runs_its_dependent(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let ran: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = ran.clone();
    let _worker = start(&client, quick_options().concurrency(2), move |w| {
        w.task(FLAKY, |_ctx: TaskContext, _: ()| async move { Err::<(), _>(TaskError::new("broken")) })
            .expect("register");
        w.task(AFTER, move |ctx: TaskContext, _: ()| {
            let seen = seen.clone();
            async move {
                seen.lock().expect("ran").push(ctx.task_id().to_string());
                let rows = ctx.dependencies().await?;
                Ok::<_, TaskError>(json!(rows.iter().map(|t| t.status.as_str()).collect::<Vec<_>>()))
            }
        })
        .expect("register");
    });
    let ok = AFTER.submit(&client, &()).await.expect("submit");
    let bad = FLAKY.submit(&client, &()).max_attempts(1).await.expect("submit");
    let canceled = AFTER.submit(&client, &()).after([&bad.id]).await.expect("submit");
    let downstream = AFTER.submit(&client, &()).after([&canceled.id]).await.expect("submit");
    let runs = AFTER
        .submit(&client, &())
        .after([&ok.id, &bad.id])
        .on_dependency_failure(DependencyFailure::Run)
        .await
        .expect("submit");

    let runs_done = finished(&client, &runs.id).await;
    assert_eq!(runs_done.status, TaskStatus::Succeeded, "{:?}", runs_done.error);
    assert_eq!(AFTER.result_of(runs_done).expect("result"), json!(["succeeded", "failed"]));

    let canceled = finished(&client, &canceled.id).await;
    assert_eq!(canceled.status, TaskStatus::Canceled);
    assert_dependency_envelope(&canceled, &bad, TaskStatus::Failed);
    let downstream = finished(&client, &downstream.id).await;
    assert_eq!(downstream.status, TaskStatus::Canceled);
    assert_dependency_envelope(&downstream, &canceled, TaskStatus::Canceled);
    assert!(!ran.lock().expect("ran").contains(&canceled.id), "a canceled dependent never ran");

    // A dependency that already ended counts at submit.
    let late = AFTER.submit(&client, &()).after([&bad.id]).await.expect("submit");
    assert_eq!(late.status, TaskStatus::Canceled, "a dependency already failed cancels at once");
    assert_dependency_envelope(&late, &bad, TaskStatus::Failed);
    let ready = AFTER.submit(&client, &()).after([&ok.id, &ok.id]).await.expect("submit");
    assert!(!is_waiting(&ready), "every dependency already succeeded: due now");
    let wait = client.task_wait(&ready.id).await.expect("task_wait").expect("a wait");
    assert_eq!((wait.total, wait.remaining), (1, 0), "an id given twice counts once");
    assert_eq!(finished(&client, &ready.id).await.status, TaskStatus::Succeeded);
}

fn assert_dependency_envelope(task: &Task, dependency: &Task, status: TaskStatus) {
    let envelope = task.error.as_ref().and_then(ErrorEnvelope::from_json).expect("an error envelope");
    assert_eq!((envelope.code.as_str(), envelope.error_type.as_str()), ("dependency_failed", "DependencyFailed"));
    assert!(!envelope.retryable);
    assert_eq!(
        envelope.details,
        json!({"dependency_id": dependency.id, "dependency_name": dependency.name, "dependency_status": status.as_str()})
    );
    let expected = format!("dependency {} ({}) ended {}", dependency.id, dependency.name, status.as_str());
    assert_eq!(envelope.message, expected);
}

/// An id that names no task refuses the submit with a `ValidationError` on
/// the field `after`, and nothing is written: no task, no key.
pub async fn an_unknown_dependency_refuses_the_submit(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let real = client.submit("real", &()).await.expect("submit");
    let refused = client
        .submit("dependent", &())
        .key("dependent-1")
        .after([real.id.as_str(), "task_01J0000000000000000000NOPE"])
        .await
        .expect_err("an unknown dependency");
    assert_eq!(refused.kind(), ErrorKind::ValidationError, "{refused}");
    assert!(refused.to_string().contains("task_01J0000000000000000000NOPE"), "{refused}");
    assert!(client.get_by_key("dependent-1").await.expect("get").is_none(), "nothing written");
    let stats = client.stats(None).await.expect("stats");
    assert_eq!(stats.values().map(|c| c.get(TaskStatus::Queued)).sum::<u64>(), 1, "only the real task");
    let empty = client.submit("dependent", &()).after([""]).await.expect_err("an empty id");
    assert_eq!(empty.kind(), ErrorKind::ValidationError);
}

/// Claims the one queued task of `queue` as `worker`.
async fn claim_on(worker: &WorkerSession, queue: &str) -> Task {
    let claimed = worker.claim(vec![ClaimDraw::new(vec![queue.to_string()]).limit(1)], vec![]).await.expect("claim");
    claimed.into_iter().next().unwrap_or_else(|| panic!("a task to claim on {queue}"))
}

async fn fail_on(worker: &WorkerSession, queue: &str) -> Task {
    let task = claim_on(worker, queue).await;
    let envelope = ErrorEnvelope::new(codes::TASK_ERROR, "broken").to_json();
    worker.fail(&task.id, envelope, None).await.expect("fail")
}

/// The rules around a waiting task, settled by hand: a canceled waiting
/// task stays canceled when its dependency ends; a dependency that fails,
/// is retried and ends again counts once; retrying a failed dependency
/// does not revive the dependent it canceled, and retrying that dependent
/// runs it at once (it does not wait again); a purge deletes the edges of
/// what it deletes, whichever side of them it is on.
pub async fn waiting_tasks_follow_the_cancel_retry_and_purge_rules(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let worker = session(&client, "deps-worker", Duration::from_secs(30));

    // Cancel a waiting task; its dependency then ends: it stays canceled.
    let p = client.submit("p", &()).queue("q_p").await.expect("submit");
    let w = client.submit("w", &()).queue("q_w").after([&p.id]).await.expect("submit");
    assert_eq!(client.cancel(&w.id).await.expect("cancel").map(|t| t.status), Some(TaskStatus::Canceled));
    let claimed = claim_on(&worker, "q_p").await;
    worker.complete(&claimed.id, json!(1)).await.expect("complete");
    assert_eq!(status(&client, &w.id).await, TaskStatus::Canceled, "a canceled waiter is not revived");

    // A dependency failing twice counts once (Run: the dependent waits for the other).
    let m = client.submit("m", &()).queue("q_m").await.expect("submit");
    let n = client.submit("n", &()).queue("q_n").await.expect("submit");
    let z = client
        .submit("z", &())
        .queue("q_z")
        .after([&m.id, &n.id])
        .on_dependency_failure(DependencyFailure::Run)
        .await
        .expect("submit");
    fail_on(&worker, "q_m").await;
    client.retry(&m.id).await.expect("retry").expect("retried");
    fail_on(&worker, "q_m").await;
    let wait = client.task_wait(&z.id).await.expect("task_wait").expect("a wait");
    assert_eq!((wait.remaining, wait.waiting), (1, true), "m counted once however often it ended");
    let n_claimed = claim_on(&worker, "q_n").await;
    worker.complete(&n_claimed.id, json!(2)).await.expect("complete");
    let z_row = client.get(&z.id).await.expect("get").expect("z");
    assert!(!is_waiting(&z_row) && z_row.status == TaskStatus::Queued, "released: {z_row:?}");

    // Retrying the failed dependency does not revive its canceled dependent.
    let x = client.submit("x", &()).queue("q_x").await.expect("submit");
    let y = client.submit("y", &()).queue("q_y").after([&x.id]).await.expect("submit");
    fail_on(&worker, "q_x").await;
    assert_eq!(status(&client, &y.id).await, TaskStatus::Canceled);
    client.retry(&x.id).await.expect("retry").expect("retried");
    let x_claimed = claim_on(&worker, "q_x").await;
    worker.complete(&x_claimed.id, json!(3)).await.expect("complete");
    assert_eq!(status(&client, &y.id).await, TaskStatus::Canceled, "not revived by its dependency's retry");
    let retried = client.retry(&y.id).await.expect("retry").expect("retried");
    assert!(!is_waiting(&retried), "a retried dependent runs at once");
    claim_on(&worker, "q_y").await;

    // A purge takes the edges of what it deletes.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let purged = client.purge(&PurgeFilter::new().status(TaskStatus::Failed)).await.expect("purge");
    assert!(purged.contains(&m.id), "m was purged: {purged:?}");
    let z_deps = client.dependencies(&z.id).await.expect("dependencies");
    assert_eq!(z_deps.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), vec![n.id.as_str()]);
    let purged = client.purge(&PurgeFilter::new().status(TaskStatus::Canceled)).await.expect("purge");
    assert!(purged.contains(&w.id), "w was purged: {purged:?}");
    assert!(client.task_wait(&w.id).await.expect("task_wait").is_none(), "its wait went with it");
    eventually("the purged rows are gone", || async { client.get(&w.id).await.expect("get").is_none() }).await;
}

async fn status(client: &CairnQ, id: &str) -> TaskStatus {
    client.get(id).await.expect("get").expect("the task exists").status
}
