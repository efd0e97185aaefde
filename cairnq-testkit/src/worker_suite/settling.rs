//! Settling many tasks in one write (`complete_batch`), the path every
//! worker's completions take: each task must end exactly as `complete`
//! would have ended it alone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::store::{ClaimDraw, CompleteBatchParams, FailParams, SettleParams, Store};
use cairnq_core::{CairnQ, Error, Json, Result, Task, TaskDef, TaskRef, TaskSpec, TaskStatus, codes};
use cairnq_worker::{BatchItem, Phase, TaskContext, TaskError, WorkerIssue};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::support::{count, eventually, fresh, quick_options, session, some, start};
use crate::BackendFactory;
use crate::forwarding::{Forward, Forwarding};

/// `complete_batch` settles the owned tasks in the order asked, with their
/// own results (JSON null included); a pending cancel wins; a task held by
/// another worker, or not running, is left out and left alone; a repeated
/// id is refused before anything is written.
pub async fn complete_batch_settles_each_task_as_complete_would(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    for i in 0..4 {
        client.submit("job", &i).await.expect("submit");
    }
    let (w, other) =
        (session(&client, "w", Duration::from_secs(60)), session(&client, "other", Duration::from_secs(60)));
    let draw = |limit| vec![ClaimDraw::new(vec!["default".into()]).limit(limit)];
    let mine = w.claim(draw(3), vec![]).await.expect("claim");
    let theirs = other.claim(draw(1), vec![]).await.expect("claim");
    let [a, b, c] = [&mine[0].id, &mine[1].id, &mine[2].id].map(String::clone);
    client.cancel(&c).await.expect("cancel requested");
    let batch = |pairs: Vec<(&String, serde_json::Value)>| -> Vec<(String, Json)> {
        pairs.into_iter().map(|(id, r)| (id.clone(), r.into())).collect()
    };

    let twice = batch(vec![(&a, json!(1)), (&a, json!(2))]);
    assert!(matches!(w.complete_batch(twice).await, Err(Error::Validation { .. })));
    assert_eq!(client.get(&a).await.expect("get").expect("row").status, TaskStatus::Running, "nothing written");

    let asked = batch(vec![(&c, json!("late")), (&theirs[0].id, json!(0)), (&b, json!(null)), (&a, json!({"n": [1]}))]);
    let settled = w.complete_batch(asked).await.expect("complete_batch");
    let expected = [(&c, TaskStatus::Canceled), (&b, TaskStatus::Succeeded), (&a, TaskStatus::Succeeded)]
        .map(|(id, status)| TaskRef { id: id.clone(), status });
    assert_eq!(settled, expected, "settled ones only, in the order asked");

    let row = |id: String| {
        let client = client.clone();
        async move { client.get(&id).await.expect("get").expect("row") }
    };
    let (a, b, c, other) = (row(a).await, row(b).await, row(c).await, row(theirs[0].id.clone()).await);
    assert_eq!((a.result, a.progress, a.lease_until_ms.is_none()), (some(json!({"n": [1]})), Some(1.0), true));
    assert_eq!(b.result, some(json!(null)), "a null result is stored as JSON null");
    assert_eq!((c.result, c.progress), (None, None), "cancel wins: result and progress untouched");
    assert!(a.completed_at_ms.is_some() && c.completed_at_ms.is_some());
    assert_eq!((other.status, other.worker_id.as_deref()), (TaskStatus::Running, Some("other")), "not ours");
    let again = w.complete_batch(batch(vec![(&a.id, json!(2))])).await.expect("complete_batch");
    assert!(again.is_empty(), "a settled task is no longer running: left out");
}

/// Emits numbers back, in batches.
const EMIT: TaskDef<i64, Value> = TaskDef::new("emit");

/// A result the store refuses (Postgres jsonb cannot hold `\u0000`) never
/// takes the results written with it down too (a refused batch write is
/// made again one task at a time), and its own task is not left running
/// until its lease expires only to be rerun into the same refusal: it fails
/// at once, for good, with `unserializable_result` naming the store's
/// reason. On a store that accepts the value, every task simply succeeds.
pub async fn a_refused_result_fails_only_its_own_task(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<_> = (0..8).map(|i| TaskSpec::new("emit", &i)).collect();
    let tasks = client.submit_many(&specs).await.expect("submit_many");
    // A lease no test run comes near: ending before it proves the refused
    // task was not left to expire.
    let options = quick_options().lease(Duration::from_secs(600));
    let _worker = start(&client, options, |w| {
        w.batch_task(EMIT, 8, |batch: Vec<BatchItem<i64>>| async move {
            let result = |n: i64| if n == 3 { json!("nul\u{0}") } else { json!(n) };
            Ok::<_, TaskError>(
                batch
                    .iter()
                    .map(|item| (item.ctx.task_id().to_string(), result(item.payload)))
                    .collect::<HashMap<_, _>>(),
            )
        })
        .expect("register");
    });
    let settled = || async { count(&client, TaskStatus::Succeeded).await + count(&client, TaskStatus::Failed).await };
    eventually("every task is settled", || async { settled().await == 8 }).await;
    for (i, task) in tasks.iter().enumerate() {
        let row = client.get(&task.id).await.expect("get").expect("row");
        match (i, row.status) {
            (3, TaskStatus::Succeeded) => assert_eq!(row.result, some(json!("nul\u{0}")), "stored as given"),
            (3, status) => {
                let envelope = row.error_envelope().expect("an envelope");
                assert_eq!((status, row.attempt, envelope.retryable), (TaskStatus::Failed, 1, false));
                assert_eq!(envelope.code, codes::UNSERIALIZABLE_RESULT);
                assert!(envelope.message.contains("refused the handler's result"), "{}", envelope.message);
            }
            (_, status) => assert_eq!((status, row.result), (TaskStatus::Succeeded, some(json!(i)))),
        }
    }
}

/// A store whose settle writes (`complete`, `complete_batch`, `fail`) fail
/// as a full disk would, before reaching the real store; everything else
/// is the real store's.
struct FailingSettles(Arc<dyn Store>);

impl FailingSettles {
    fn refused<T>() -> Result<T> {
        Err(Error::Storage { message: "disk full (injected by the test)".into(), source: None, transient: false })
    }
}

#[async_trait]
impl Forward for FailingSettles {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }
    async fn complete(&self, _params: &SettleParams) -> Result<Task> {
        Self::refused()
    }
    async fn complete_batch(&self, _params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        Self::refused()
    }
    async fn fail(&self, _params: &FailParams) -> Result<Task> {
        Self::refused()
    }
}

/// A settle write the store fails (of a success and of a failure) reaches
/// `on_error` as a store issue of the settle phase naming the task, and
/// reads "the settle of task X failed"; the task is left as it was
/// (running, to its lease), since nothing was written.
pub async fn a_failed_settle_is_reported_with_its_phase_and_task(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let failing = CairnQ::new(Forwarding(FailingSettles(fresh.store.clone())));
    let ok = client.submit("settle_ok", &0).await.expect("submit");
    let failed = client.submit("settle_fail", &0).await.expect("submit");
    let reported = Arc::new(Mutex::new(Vec::new()));
    let seen = reported.clone();
    let options = quick_options().lease(Duration::from_secs(600)).on_error(move |issue| {
        if let WorkerIssue::Store { phase, task_id, .. } = &issue {
            seen.lock().push((*phase, task_id.clone(), issue.to_string()));
        }
    });
    let _worker = start(&failing, options, |w| {
        w.task("settle_ok", |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n) }).expect("register");
        w.task("settle_fail", |_ctx: TaskContext, _: i64| async move { Err::<(), _>(TaskError::new("no")) })
            .expect("register");
    });
    for task in [&ok, &failed] {
        let named = |r: &(Phase, Option<String>, String)| r.0 == Phase::Settle && r.1.as_deref() == Some(&task.id);
        eventually("the failed settle is reported", || async { reported.lock().iter().any(named) }).await;
        let shown = reported.lock().iter().find(|r| named(r)).map(|r| r.2.clone()).unwrap_or_default();
        assert!(shown.contains(&format!("the settle of task {} failed", task.id)), "{shown}");
        assert!(shown.contains("disk full (injected by the test)"), "{shown}");
        let row = client.get(&task.id).await.expect("get").expect("row");
        assert_eq!((row.status, row.attempt), (TaskStatus::Running, 1), "nothing was written");
    }
}
