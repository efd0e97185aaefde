//! Durable steps (`ctx.step`, extension `ext_0009_steps`) through a real
//! worker: a step runs once per task however many attempts the task
//! takes, a permanent failure is kept and a retryable one is not, repeated
//! names are numbered, a step of an attempt that lost its lease is refused
//! by the store's ownership check, and a purge takes a task's steps with it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cairnq_core::{Error, Json, PurgeFilter, TaskStatus};
use cairnq_worker::{StepFailure, TaskContext, TaskError};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::support::{finished, fresh, quick_options, some, start};
use crate::BackendFactory;
use crate::support::session;

/// How often each step's closure ran, by step name.
#[derive(Debug, Default)]
struct Runs(Mutex<HashMap<String, u32>>);

impl Runs {
    fn ran(&self, name: &str) {
        *self.0.lock().entry(name.to_string()).or_default() += 1;
    }

    fn of(&self, name: &str) -> u32 {
        self.0.lock().get(name).copied().unwrap_or(0)
    }
}

/// Issue 26's acceptance: three steps, and a panic after the second on the
/// first attempt. Steps one and two ran once in all, step three once, and
/// the task ended succeeded on attempt 2 with the stored values: each
/// step's row names the attempt that stored it.
pub async fn a_step_runs_once_across_attempts(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let runs = Arc::new(Runs::default());
    let counted = runs.clone();
    let _worker = start(&client, quick_options(), move |w| {
        w.task("checkout", move |ctx: TaskContext, _: Value| {
            let runs = counted.clone();
            async move {
                let charge: String = ctx
                    .step("charge", || async {
                        runs.ran("charge");
                        Ok::<_, TaskError>("ch_1".to_string())
                    })
                    .await?;
                let receipt: u64 = ctx
                    .step("receipt", || async {
                        runs.ran("receipt");
                        Ok::<_, TaskError>(42)
                    })
                    .await?;
                assert!(ctx.attempt() > 1, "the first attempt dies after two steps");
                ctx.step("ship", || async {
                    runs.ran("ship");
                    Ok::<_, TaskError>(())
                })
                .await?;
                Ok::<_, TaskError>(json!({"charge": charge, "receipt": receipt}))
            }
        })
        .expect("register");
    });
    let task = client.submit("checkout", &json!({})).max_attempts(3).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.attempt), (TaskStatus::Succeeded, 2), "{:?}", done.error);
    assert_eq!(done.result, some(json!({"charge": "ch_1", "receipt": 42})), "attempt 2 got the stored values");
    assert_eq!((runs.of("charge"), runs.of("receipt"), runs.of("ship")), (1, 1, 1));
    let steps = client.steps(&task.id).await.expect("read the steps");
    let stored: Vec<_> = steps.iter().map(|s| (s.name.as_str(), s.attempt, s.result.clone())).collect();
    assert_eq!(
        stored,
        [("charge", 1, some(json!("ch_1"))), ("receipt", 1, some(json!(42))), ("ship", 2, some(json!(null)))]
    );
}

/// A permanent failure is stored and given back to later attempts without
/// running the step; a retryable one is not stored, so the step runs again.
pub async fn a_permanent_step_failure_is_kept_and_a_retryable_one_is_not(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let runs = Arc::new(Runs::default());
    let counted = runs.clone();
    let _worker = start(&client, quick_options(), move |w| {
        w.task("flaky", move |ctx: TaskContext, _: Value| {
            let runs = counted.clone();
            async move {
                let declined = ctx
                    .step("charge", || async {
                        runs.ran("charge");
                        Err::<(), _>(TaskError::new("card declined").code("declined"))
                    })
                    .await;
                let Err(StepFailure::Failed(declined)) = declined else { panic!("a failure: {declined:?}") };
                assert_eq!((declined.envelope().code.as_str(), declined.is_retryable()), ("declined", false));
                let attempt = ctx.attempt();
                let busy = ctx
                    .step("lookup", || async move {
                        runs.ran("lookup");
                        if attempt < 3 { Err(TaskError::retryable("busy")) } else { Ok(attempt) }
                    })
                    .await;
                // Retry the task itself until the retryable step succeeds.
                busy.map_err(|_| TaskError::retryable("try again"))
            }
        })
        .expect("register");
    });
    let task = client.submit("flaky", &json!({})).max_attempts(3).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.result.clone()), (TaskStatus::Succeeded, some(json!(3))), "{:?}", done.error);
    assert_eq!((runs.of("charge"), runs.of("lookup")), (1, 3), "the kept failure ran once, the retryable one thrice");
    let steps = client.steps(&task.id).await.expect("read the steps");
    let charge = steps.iter().find(|s| s.name == "charge").expect("the failure is stored");
    assert!(charge.failed() && charge.result.is_none(), "{charge:?}");
    assert_eq!(charge.error.as_ref().map(|e| e.message.as_str()), Some("card declined"));
    let lookup = steps.iter().find(|s| s.name == "lookup").expect("the value is stored");
    assert_eq!((lookup.attempt, lookup.result.clone()), (3, some(json!(3))));
}

/// A loop of steps of one name stores one row per turn (`item`,
/// `item#2`, ...), and a later attempt replays each turn's own value.
pub async fn repeated_step_names_are_numbered(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let runs = Arc::new(AtomicU32::new(0));
    let counted = runs.clone();
    let _worker = start(&client, quick_options(), move |w| {
        w.task("loop", move |ctx: TaskContext, _: Value| {
            let runs = counted.clone();
            async move {
                let mut got = Vec::new();
                for turn in 0..3_u32 {
                    let runs = runs.clone();
                    let value = ctx
                        .step("item", || async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            Ok::<_, TaskError>(turn * 10)
                        })
                        .await?;
                    got.push(value);
                }
                if ctx.attempt() == 1 {
                    return Err(TaskError::retryable("again, to replay the loop"));
                }
                Ok::<_, TaskError>(got)
            }
        })
        .expect("register");
    });
    let task = client.submit("loop", &json!({})).max_attempts(2).await.expect("submit");
    let done = finished(&client, &task.id).await;
    assert_eq!((done.status, done.result.clone()), (TaskStatus::Succeeded, some(json!([0, 10, 20]))));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "each turn ran once, in attempt 1");
    let mut names: Vec<String> = client.steps(&task.id).await.expect("steps").into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(names, ["item", "item#2", "item#3"]);
}

/// The store refuses a step of an attempt that no longer holds its lease,
/// whoever asks: a lease that ran out, an attempt of the same worker that
/// a later claim replaced, and a worker whose context was abandoned at
/// `max_run` (refused before its closure runs). Nothing is written.
pub async fn a_step_of_a_lost_lease_is_refused(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let task = client.submit("charge", &json!({})).max_attempts(5).await.expect("submit");
    let short = session(&client, "w-short", Duration::from_millis(150));
    let draw = || vec![cairnq_core::store::ClaimDraw::new(vec!["default".into()]).limit(1)];
    assert_eq!(short.claim(draw(), vec![]).await.expect("claim").len(), 1);
    short.save_step(&task.id, 1, "held", Ok(Json::from(json!(1)))).await.expect("stored while held");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let expired = short.save_step(&task.id, 1, "late", Ok(Json::from(json!(2)))).await;
    assert!(matches!(expired, Err(Error::LostLease { .. })), "the lease ran out: {expired:?}");
    // The same worker claims attempt 2; attempt 1's step is still refused.
    let again = session(&client, "w-short", Duration::from_secs(30));
    let claimed = again.claim(draw(), vec![]).await.expect("reclaim");
    assert_eq!(claimed.first().map(|t| t.attempt), Some(2));
    let stale = again.save_step(&task.id, 1, "stale", Ok(Json::from(json!(3)))).await;
    assert!(matches!(stale, Err(Error::LostLease { .. })), "a replaced attempt: {stale:?}");
    let names: Vec<String> = client.steps(&task.id).await.expect("steps").into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["held"], "no refused step was written");

    let (contexts, mut started) = mpsc::unbounded_channel();
    let _worker = start(&client, quick_options().max_run(Duration::from_millis(300)), move |w| {
        w.task("hang", move |ctx: TaskContext, _: Value| {
            let _ = contexts.send(ctx);
            std::future::pending::<Result<(), TaskError>>()
        })
        .expect("register");
    });
    let hung = client.submit("hang", &json!({})).max_attempts(1).await.expect("submit");
    let ctx = tokio::time::timeout(Duration::from_secs(30), started.recv()).await.expect("started").expect("a ctx");
    assert_eq!(finished(&client, &hung.id).await.status, TaskStatus::Failed, "abandoned at max_run");
    let ran = Arc::new(AtomicU32::new(0));
    let counted = ran.clone();
    let refused = ctx
        .step("after", || async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, TaskError>(())
        })
        .await;
    assert!(refused.as_ref().is_err_and(StepFailure::is_lost_lease), "{refused:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a lost attempt does not run the step");
    assert!(client.steps(&hung.id).await.expect("steps").is_empty());
}

/// A purge deletes a task's steps with it (the cascade of the steps
/// table), and a bad step name is refused before anything runs.
pub async fn a_purge_deletes_the_steps_of_its_tasks(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options(), |w| {
        w.task("stepped", |ctx: TaskContext, _: Value| async move {
            let bad = ctx.step("a#1", || async { Ok::<_, TaskError>(()) }).await;
            assert!(matches!(bad, Err(StepFailure::Store(Error::Validation { .. }))), "{bad:?}");
            ctx.step("one", || async { Ok::<_, TaskError>(1) }).await?;
            ctx.step("two", || async { Ok::<_, TaskError>(2) }).await?;
            Ok::<_, TaskError>(())
        })
        .expect("register");
    });
    let kept = client.submit("stepped", &json!({})).queue("default").await.expect("submit");
    assert_eq!(finished(&client, &kept.id).await.status, TaskStatus::Succeeded);
    assert_eq!(client.steps(&kept.id).await.expect("steps").len(), 2);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let purged = client.purge(&PurgeFilter::new()).await.expect("purge");
    assert_eq!(purged, std::slice::from_ref(&kept.id));
    assert!(client.steps(&kept.id).await.expect("steps").is_empty(), "the steps went with their task");
}
