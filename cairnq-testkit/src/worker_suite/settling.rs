//! Settling many tasks in one write (`complete_batch`), the path every
//! worker's completions take: each task must end exactly as `complete`
//! would have ended it alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cairnq_core::store::{ClaimDraw, ClaimParams, CompleteBatchParams};
use cairnq_core::{Error, TaskDef, TaskRef, TaskSpec, TaskStatus};
use cairnq_worker::{BatchItem, Phase, TaskError, WorkerIssue};
use serde_json::{Value, json};

use super::support::{count, eventually, fresh, quick_options, some, start};
use crate::BackendFactory;

/// `complete_batch` settles the owned tasks in the order asked, with their
/// own results (JSON null included); a pending cancel wins; a task held by
/// another worker, or not running, is left out and left alone; a repeated
/// id is refused before anything is written.
pub async fn complete_batch_settles_each_task_as_complete_would(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    for i in 0..4 {
        client.submit("job", &i).await.expect("submit");
    }
    let claim = |worker: &str, limit| {
        ClaimParams::new(worker, 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(limit))
    };
    let mine = client.claim(&claim("w", 3)).await.expect("claim");
    let theirs = client.claim(&claim("other", 1)).await.expect("claim");
    let [a, b, c] = [&mine[0].id, &mine[1].id, &mine[2].id].map(String::clone);
    client.cancel(&c).await.expect("cancel requested");
    let batch = |pairs: Vec<(&String, serde_json::Value)>| {
        CompleteBatchParams::new("w", pairs.into_iter().map(|(id, r)| (id.clone(), r.into())).collect())
    };

    let twice = batch(vec![(&a, json!(1)), (&a, json!(2))]);
    assert!(matches!(client.complete_batch(&twice).await, Err(Error::Validation { .. })));
    assert_eq!(client.get(&a).await.expect("get").expect("row").status, TaskStatus::Running, "nothing written");

    let asked = batch(vec![(&c, json!("late")), (&theirs[0].id, json!(0)), (&b, json!(null)), (&a, json!({"n": [1]}))]);
    let settled = client.complete_batch(&asked).await.expect("complete_batch");
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
    let again = client.complete_batch(&batch(vec![(&a.id, json!(2))])).await.expect("complete_batch");
    assert!(again.is_empty(), "a settled task is no longer running: left out");
}

/// Emits numbers back, in batches.
const EMIT: TaskDef<i64, Value> = TaskDef::new("emit");

/// A result the store refuses (Postgres jsonb cannot hold `\u0000`) never
/// takes the results written with it down too: a refused batch write is
/// made again one task at a time, and the refusal is reported as a store
/// failure of the settle of that task, by id. On a store that accepts the
/// value, every task simply succeeds.
pub async fn a_refused_result_fails_only_its_own_task(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<_> = (0..8).map(|i| TaskSpec::new("emit", &i)).collect();
    let tasks = client.submit_many(&specs).await.expect("submit_many");
    let reported = Arc::new(Mutex::new(Vec::new()));
    let seen = reported.clone();
    let options = quick_options().on_error(move |issue| {
        let named = match &issue {
            WorkerIssue::Store { phase, task_id, .. } => Some((*phase, task_id.clone())),
            _ => None,
        };
        seen.lock().expect("issues").push((named, issue.to_string()));
    });
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
    eventually("the seven storable results are written", || async { count(&client, TaskStatus::Succeeded).await >= 7 })
        .await;
    for (i, task) in tasks.iter().enumerate() {
        let row = client.get(&task.id).await.expect("get").expect("row");
        match (i, row.status) {
            (3, TaskStatus::Succeeded) => assert_eq!(row.result, some(json!("nul\u{0}")), "stored as given"),
            (3, _) => {
                let reported = reported.lock().expect("issues").clone();
                let settle = Some((Phase::Settle, Some(task.id.clone())));
                assert!(reported.iter().any(|(named, _)| *named == settle), "{reported:?}");
                let text = format!("the settle of task {} failed", task.id);
                assert!(reported.iter().any(|(_, shown)| shown.contains(&text)), "{reported:?}");
            }
            (_, status) => assert_eq!((status, row.result), (TaskStatus::Succeeded, some(json!(i)))),
        }
    }
}
