//! What bounds a worker's work: batch delivery and settlement, resources
//! shared between names, per-name concurrency, and the payload byte budget.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use cairnq_core::{Error, Json, TaskDef, TaskSpec, TaskStatus};
use cairnq_worker::{BatchItem, TaskContext, TaskError, TaskOptions, Worker};
use serde_json::{Value, json};

use super::support::{Gauge, count, eventually, fresh, quick_options, start};
use crate::BackendFactory;

/// 256 tasks arrive in one batch call; some are settled early (failed or
/// succeeded), the rest by the call's return with results from its map;
/// leases of unsettled tasks are renewed past the lease length while
/// settled ones are left alone; settling twice is a no-op.
pub async fn a_batch_call_settles_what_it_left_open(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<_> = (0..256).map(|i| TaskSpec::new("embed", &i)).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let calls = Arc::new(AtomicUsize::new(0));
    let kept_leases = Arc::new(AtomicBool::new(false));
    let second_settle_was_noop = Arc::new(AtomicBool::new(false));
    let (c, k, n) = (calls.clone(), kept_leases.clone(), second_settle_was_noop.clone());
    let lease = Duration::from_millis(1_000);
    let _worker = start(&client, quick_options().lease(lease), move |w| {
        w.batch_task(EMBED, 256, move |batch: Vec<BatchItem<i64>>| {
            let (c, k, n) = (c.clone(), k.clone(), n.clone());
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                assert_eq!(batch.len(), 256, "one call gets every task");
                settle_early(&batch).await?;
                tokio::time::sleep(lease * 5 / 2).await;
                k.store(batch.iter().all(|item| !item.ctx.lost_lease()), Ordering::SeqCst);
                n.store(batch[0].ctx.succeed(&"again").await?.is_none(), Ordering::SeqCst);
                let mapped =
                    batch[..40].iter().map(|item| (item.ctx.task_id().to_string(), json!({"mapped": item.payload})));
                Ok::<_, TaskError>(mapped.collect::<HashMap<_, _>>())
            }
        })
        .expect("register");
    });
    eventually("every task settles", || async { count(&client, TaskStatus::Succeeded).await == 246 }).await;
    assert_eq!(count(&client, TaskStatus::Failed).await, 10);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(kept_leases.load(Ordering::SeqCst), "no context lost its lease while the call outlived the lease");
    assert!(second_settle_was_noop.load(Ordering::SeqCst));
    let rows = client.list(&cairnq_core::ListFilter::new().name("embed").limit(300)).await.expect("list");
    let results: Vec<Value> = rows.tasks.iter().filter_map(|t| t.result.as_ref()?.to_value().ok()).collect();
    assert_eq!(results.iter().filter(|r| r.get("early").is_some()).count(), 10);
    assert_eq!(results.iter().filter(|r| r.get("mapped").is_some()).count(), 20, "mapped minus the early-settled");
    assert_eq!(
        rows.tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Succeeded && t.result.as_ref().is_some_and(Json::is_null))
            .count(),
        216
    );
}

/// Fails the first ten tasks permanently and succeeds the next ten.
async fn settle_early(batch: &[BatchItem<i64>]) -> Result<(), TaskError> {
    for item in &batch[..10] {
        item.ctx.fail_with(TaskError::new("rejected early")).await?;
    }
    for item in &batch[10..20] {
        item.ctx.succeed(&json!({"early": true})).await?;
    }
    Ok(())
}

/// Embeds numbers, in batches.
const EMBED: TaskDef<i64, Value> = TaskDef::new("embed");

/// Imports numbers, in batches.
const IMPORT: TaskDef<i64, String> = TaskDef::new("import");

/// A batch call failing with a non-retryable error fails every task it left
/// open permanently; the one it settled keeps its result.
pub async fn a_failed_batch_call_fails_what_it_left_open(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<_> = (0..5).map(|i| TaskSpec::new("import", &i)).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let _worker = start(&client, quick_options(), |w| {
        w.batch_task(IMPORT, 5, |batch: Vec<BatchItem<i64>>| async move {
            batch[0].ctx.succeed(&"saved").await?;
            Err::<(), _>(TaskError::new("bad file"))
        })
        .expect("register");
    });
    eventually("every task settles", || async { count(&client, TaskStatus::Failed).await == 4 }).await;
    assert_eq!(count(&client, TaskStatus::Succeeded).await, 1);
    let failed = client.list(&cairnq_core::ListFilter::new().status(TaskStatus::Failed)).await.expect("list");
    assert!(failed.tasks.iter().all(|t| t.attempt == 1), "a permanent failure does not retry");
}

/// Two names sharing `{gpu: 1}` never overlap across 200 tasks while a third
/// name runs alongside; an undeclared resource is refused at registration.
pub async fn a_resource_is_never_overcommitted(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let options = quick_options().concurrency(4).resource("gpu", 1);
    let mut probe = Worker::new(client.clone(), options.clone()).expect("options");
    let refused = probe.task_with("x", TaskOptions::new().resource("tpu"), |_c: TaskContext, _: Value| async move {
        Ok::<_, TaskError>(())
    });
    assert!(matches!(refused, Err(Error::Validation { field: "resource", .. })), "{refused:?}");
    let (gpu, all) = (Gauge::new(), Gauge::new());
    let (g, a) = (gpu.clone(), all.clone());
    let _worker = start(&client, options, move |w| {
        for name in ["render", "train"] {
            let (g, a) = (g.clone(), a.clone());
            let handler = move |_ctx: TaskContext, _: Value| held(vec![g.clone(), a.clone()], 2);
            w.task_with(name, TaskOptions::new().resource("gpu"), handler).expect("register");
        }
        w.task("cpu", move |_ctx: TaskContext, _: Value| held(vec![a.clone()], 30)).expect("register");
    });
    let mut specs = Vec::new();
    for i in 0..100 {
        specs.extend([TaskSpec::new("render", &i), TaskSpec::new("train", &i)]);
        if i % 5 == 0 {
            specs.push(TaskSpec::new("cpu", &i));
        }
    }
    client.submit_many(&specs).await.expect("submit_many");
    eventually("all 220 tasks succeed", || async { count(&client, TaskStatus::Succeeded).await == 220 }).await;
    assert_eq!(gpu.peak(), 1, "gpu tasks overlapped");
    assert!(all.peak() >= 2, "the cpu name never ran alongside the gpu names");
}

/// A name with its own concurrency never exceeds it, while the rest of the
/// worker's slots serve other names.
pub async fn per_name_concurrency_caps_calls(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let (limited, others) = (Gauge::new(), Gauge::new());
    let (l, o) = (limited.clone(), others.clone());
    let _worker = start(&client, quick_options().concurrency(6), move |w| {
        let handler = move |_ctx: TaskContext, _: Value| held(vec![l.clone()], 20);
        w.task_with("limited", TaskOptions::new().concurrency(2), handler).expect("register");
        w.task("other", move |_ctx: TaskContext, _: Value| held(vec![o.clone()], 20)).expect("register");
    });
    let specs: Vec<_> = (0..30).flat_map(|i| [TaskSpec::new("limited", &i), TaskSpec::new("other", &i)]).collect();
    client.submit_many(&specs).await.expect("submit_many");
    eventually("all 60 tasks succeed", || async { count(&client, TaskStatus::Succeeded).await == 60 }).await;
    assert_eq!(limited.peak(), 2);
    assert!(others.peak() > 2, "the other name used the remaining slots (peak {})", others.peak());
}

/// With a 1 MB budget and 300 KB payloads, the payload bytes held by
/// running handlers never exceed the budget plus one payload, yet several
/// run at once.
pub async fn the_byte_budget_bounds_payloads_in_flight(factory: &dyn BackendFactory) {
    const BUDGET: u64 = 1_000_000;
    const PAYLOAD: usize = 300_000;
    let (client, _fresh) = fresh(factory).await;
    let payload = "x".repeat(PAYLOAD);
    for _ in 0..10 {
        let specs: Vec<_> = (0..10).map(|_| TaskSpec::new("big", &payload)).collect();
        client.submit_many(&specs).await.expect("submit_many");
    }
    let bytes = Gauge::new();
    let b = bytes.clone();
    let _worker = start(&client, quick_options().concurrency(10).max_in_flight_bytes(BUDGET), move |w| {
        w.task("big", move |_ctx: TaskContext, body: String| {
            let b = b.clone();
            async move {
                let size = u64::try_from(body.len()).unwrap_or(u64::MAX);
                b.add(size);
                tokio::time::sleep(Duration::from_millis(40)).await;
                b.sub(size);
                Ok::<_, TaskError>(())
            }
        })
        .expect("register");
    });
    eventually("all 100 tasks succeed", || async { count(&client, TaskStatus::Succeeded).await == 100 }).await;
    let one_payload = u64::try_from(PAYLOAD).unwrap_or(u64::MAX) + 2;
    assert!(bytes.peak() <= BUDGET + one_payload, "peak {} bytes", bytes.peak());
    assert!(bytes.peak() > one_payload, "never ran two at once (peak {})", bytes.peak());
    assert_eq!(bytes.current(), 0);
}

/// Holds one unit on every gauge for `ms`.
async fn held(gauges: Vec<Arc<Gauge>>, ms: u64) -> Result<(), TaskError> {
    gauges.iter().for_each(|g| g.add(1));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    gauges.iter().for_each(|g| g.sub(1));
    Ok(())
}

/// With one slot and two names that each have their own draw, the draw
/// order rotates between claims, so a backlog of one name does not starve
/// the other.
pub async fn rotation_shares_slots_between_names(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let mut specs: Vec<_> = (0..20).map(|i| TaskSpec::new("first", &i)).collect();
    specs.extend((0..20).map(|i| TaskSpec::new("second", &i)));
    client.submit_many(&specs).await.expect("submit_many");
    let order: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let seen = order.clone();
    let _worker = start(&client, quick_options().concurrency(1), move |w| {
        for name in ["first", "second"] {
            let seen = seen.clone();
            let handler = move |ctx: TaskContext, _: Value| {
                seen.lock().expect("lock").push(ctx.name().to_string());
                async move { Ok::<_, TaskError>(()) }
            };
            w.task_with(name, TaskOptions::new().concurrency(1), handler).expect("register");
        }
    });
    eventually("all 40 tasks succeed", || async { count(&client, TaskStatus::Succeeded).await == 40 }).await;
    let order = order.lock().expect("lock").clone();
    let early_second = order[..10].iter().filter(|n| *n == "second").count();
    assert!((3..=7).contains(&early_second), "the first ten calls were {order:?}");
}
