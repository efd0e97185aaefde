//! What the metrics say about real work: every submit, claim and
//! settlement counted exactly once with its outcome, read through the
//! counting recorder ([`crate::telemetry`]). Each test works on a queue of
//! its own, the label that keeps its series apart from every other test's
//! in the same process.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::observe::{
    LEASES_RECOVERED, LIMIT_RUNNING, LIMIT_THROTTLED, QUEUE_DEPTH, QUEUE_OLDEST_AGE, TASK_DURATION, TASK_QUEUE_WAIT,
    TASKS_CLAIMED, TASKS_SETTLED, TASKS_SUBMITTED,
};
use cairnq_core::store::{ClaimDraw, HeartbeatBatchParams};
use cairnq_core::{CairnQ, HeldLease, Limit, QueueGauges, Result, Store, TaskStatus};
use cairnq_worker::{TaskContext, TaskError, WorkerHandle, WorkerOptions};
use serde_json::{Value, json};

use super::support::{eventually, finished, fresh, quick_options, session, start};
use crate::BackendFactory;
use crate::forwarding::{Forward, Forwarding};
use crate::telemetry::{CountingRecorder, recorder};

/// A queue no other test uses.
fn own_queue(what: &str) -> String {
    format!("metrics-{what}-{:016x}", fastrand::u64(..))
}

/// Settled attempts on `queue` with `outcome`.
fn settled(recorder: &CountingRecorder, queue: &str, outcome: &str) -> u64 {
    recorder.counter(TASKS_SETTLED, &[("queue", queue), ("outcome", outcome)])
}

/// N tasks run to success: exactly N submitted, N claimed and N settled
/// succeeded, one duration and one queue wait observed per attempt, and no
/// other outcome.
pub async fn metrics_count_each_task_once(factory: &dyn BackendFactory) {
    const N: u64 = 20;
    let recorder = recorder();
    let (client, _fresh) = fresh(factory).await;
    let queue = own_queue("ok");
    let _worker = start(&client, quick_options().queues([queue.clone()]).concurrency(4), |w| {
        w.task("metered", |_: TaskContext, n: u64| async move { Ok::<_, TaskError>(n) }).expect("register");
    });
    let mut ids = Vec::new();
    for n in 0..N {
        ids.push(client.submit("metered", &n).queue(&queue).await.expect("submit").id);
    }
    for id in &ids {
        assert_eq!(finished(&client, id).await.status, TaskStatus::Succeeded);
    }
    eventually("every settlement counted", || async { settled(recorder, &queue, "succeeded") == N }).await;
    let labels = [("queue", queue.as_str()), ("name", "metered")];
    assert_eq!(recorder.counter(TASKS_SUBMITTED, &labels), N);
    assert_eq!(recorder.counter(TASKS_CLAIMED, &labels), N);
    assert_eq!(recorder.counter(TASKS_SETTLED, &labels), N, "no other outcome");
    assert_eq!(recorder.observations(TASK_DURATION, &labels), N);
    assert_eq!(recorder.observations(TASK_QUEUE_WAIT, &labels), N);
}

/// A task failing on every attempt is counted retried, then failed, each
/// attempt claimed.
pub async fn metrics_count_retried_and_failed_attempts(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, _fresh) = fresh(factory).await;
    let queue = own_queue("fail");
    let _worker = start(&client, quick_options().queues([queue.clone()]), |w| {
        w.task("doomed", |_: TaskContext, _: Value| async move { Err::<(), _>(TaskError::retryable("no")) })
            .expect("register");
    });
    let task = client.submit("doomed", &json!({})).queue(&queue).max_attempts(3).await.expect("submit");
    assert_eq!(finished(&client, &task.id).await.status, TaskStatus::Failed);
    eventually("the failure counted", || async { settled(recorder, &queue, "failed") == 1 }).await;
    assert_eq!(settled(recorder, &queue, "retried"), 2);
    assert_eq!(settled(recorder, &queue, "succeeded"), 0);
    assert_eq!(recorder.counter(TASKS_CLAIMED, &[("queue", &queue)]), 3);
}

/// A worker whose store stops renewing its lease counts the attempt
/// `lost_lease`, once, and nothing else for it; the lease then expires and
/// the next claim recovers it (counted on its queue), failing the task
/// whose one attempt it was.
pub async fn metrics_count_a_lost_lease(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, fresh) = fresh(factory).await;
    let queue = own_queue("lost");
    let _worker = start_forgetful(&fresh.store, quick_options().queues([queue.clone()]));
    let task = client.submit("held", &json!({})).queue(&queue).max_attempts(1).await.expect("submit");
    eventually("the lost lease counted", || async { settled(recorder, &queue, "lost_lease") == 1 }).await;
    assert_eq!(finished(&client, &task.id).await.status, TaskStatus::Failed, "recovered with no attempt left");
    eventually("the recovery counted", || async { recorder.counter(LEASES_RECOVERED, &[("queue", &queue)]) == 1 })
        .await;
    // The handler returned after the loss: its result is discarded, not counted.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(recorder.counter(TASKS_SETTLED, &[("queue", &queue)]), 1, "only the lost lease");
}

/// The queue gauges read the store: a series per status for each queue,
/// and how long the oldest due task has waited. The collectors of one
/// store take turns (a second one within the interval reads nothing), and
/// a store of another database in the same process keeps its own turn.
pub async fn queue_gauges_read_depth_and_age(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, _fresh) = fresh(factory).await;
    let (other, _other_fresh) = fresh(factory).await;
    let (queue, elsewhere) = (own_queue("gauges"), own_queue("gauges-elsewhere"));
    for n in 0..3 {
        client.submit("waiting", &n).queue(&queue).await.expect("submit");
    }
    client.submit("later", &0).queue(&queue).delay(Duration::from_secs(3600)).await.expect("submit");
    other.submit("waiting", &0).queue(&elsewhere).await.expect("submit");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let hourly = |client: &CairnQ| QueueGauges::new(client.clone()).interval(Duration::from_secs(3600));
    assert!(hourly(&client).collect().await.expect("collect"), "the first collection of a store reads");
    assert!(!hourly(&client).collect().await.expect("collect"), "within the interval that store is not read");
    assert!(hourly(&other).collect().await.expect("collect"), "another store is not starved by the first");
    let depth = |queue: &str, status: &str| recorder.gauges(QUEUE_DEPTH, &[("queue", queue), ("status", status)]);
    assert_eq!(depth(&queue, "queued").first().map(|(_, v)| *v), Some(4.0), "delayed tasks are queued too");
    assert_eq!(depth(&elsewhere, "queued").first().map(|(_, v)| *v), Some(1.0), "the other store's queue");
    for status in TaskStatus::ALL {
        assert_eq!(depth(&queue, status.as_str()).len(), 1, "one {status} series");
    }
    let age = recorder.gauges(QUEUE_OLDEST_AGE, &[("queue", &queue)]);
    let age = age.first().map(|(_, v)| *v).expect("an age series");
    if client.oldest_due(None).await.expect("read").is_empty() {
        return eprintln!("skipped the age: {} stores report no queue age", factory.name());
    }
    assert!(age >= 0.05, "the oldest due task waited at least the 50 ms slept: {age}");
}

/// The flow-control metrics. `cairnq_limit_throttled_total{key}` counts
/// each claim that passed over a key at its limit, once per claim and key,
/// under the limit's key (a prefix default's `t:*` counts each of its keys
/// passed over). `cairnq_limit_running{key}` is set by the gauge collector
/// to each limit's running tasks, and to 0 once the limit is removed.
pub async fn limit_metrics_count_running_and_throttled(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, _fresh) = fresh(factory).await;
    let tag = format!("{:016x}", fastrand::u64(..));
    let (solo, tenants) = (format!("solo-{tag}"), format!("t-{tag}:*"));
    for key in [&solo, &tenants] {
        client.set_limit(&Limit::new(key.as_str()).concurrency(1)).await.expect("set a limit");
    }
    let queue = own_queue("limits");
    for key in [solo.clone(), format!("t-{tag}:a"), format!("t-{tag}:b")] {
        for n in 0..2 {
            client.submit("limited", &n).queue(&queue).limit_key(&key).await.expect("submit");
        }
    }
    let worker = session(&client, "limit-metrics", Duration::from_secs(60));
    let claim = || worker.claim(vec![ClaimDraw::new(vec![queue.clone()]).limit(10)], Vec::new());
    assert_eq!(claim().await.expect("claim").len(), 3, "one task of each key");
    let throttled = |key: &str| recorder.counter(LIMIT_THROTTLED, &[("key", key)]);
    // Whether the first claim already counted the keys it filled is the
    // backend's (a walk that reads only what it may start learns it at the
    // next claim); from here on every key is at its limit as a claim begins.
    let before = (throttled(&solo), throttled(&tenants));
    for round in 1..=2 {
        assert!(claim().await.expect("claim").is_empty(), "every key is at its limit");
        assert_eq!(throttled(&solo), before.0 + round, "one per claim for the exact limit");
        assert_eq!(throttled(&tenants), before.1 + 2 * round, "both keys of the default, each claim");
    }

    let running = |key: &str| recorder.gauges(LIMIT_RUNNING, &[("key", key)]).first().map(|(_, v)| *v);
    let collector = QueueGauges::new(client.clone()).interval(Duration::from_millis(1));
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(collector.collect().await.expect("collect"), "the collector's turn");
    assert_eq!((running(&solo), running(&tenants)), (Some(1.0), Some(2.0)));
    client.remove_limit(&solo).await.expect("remove the limit");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(collector.collect().await.expect("collect"), "the collector's turn");
    assert_eq!((running(&solo), running(&tenants)), (Some(0.0), Some(2.0)), "a removed limit reads 0");
}

/// A handler that returns after a cancel reached it is counted `canceled`
/// (the cancel won over its result), once, and nothing else.
pub async fn metrics_count_a_canceled_attempt(factory: &dyn BackendFactory) {
    let recorder = recorder();
    let (client, _fresh) = fresh(factory).await;
    let queue = own_queue("canceled");
    let _worker = start(&client, quick_options().queues([queue.clone()]), |w| {
        w.task("cancelable", |ctx: TaskContext, _: Value| async move {
            ctx.on_cancel().await;
            Ok::<_, TaskError>("finished anyway")
        })
        .expect("register");
    });
    let task = client.submit("cancelable", &json!({})).queue(&queue).await.expect("submit");
    eventually("the task runs", || async {
        client.get(&task.id).await.expect("get").is_some_and(|t| t.status == TaskStatus::Running)
    })
    .await;
    client.cancel(&task.id).await.expect("cancel");
    assert_eq!(finished(&client, &task.id).await.status, TaskStatus::Canceled);
    eventually("the cancel counted", || async { settled(recorder, &queue, "canceled") == 1 }).await;
    assert_eq!(recorder.counter(TASKS_SETTLED, &[("queue", &queue)]), 1, "only the cancel");
}

/// A worker over `store` through [`NoRenewals`], with a lease of 600 ms:
/// its handler `held` runs until it sees its lease lost, then returns (its
/// result to be discarded).
pub(super) fn start_forgetful(store: &Arc<dyn Store>, options: WorkerOptions) -> WorkerHandle {
    let forgetful = CairnQ::new(Forwarding(NoRenewals(store.clone())));
    start(&forgetful, options.lease(Duration::from_millis(600)), |w| {
        w.task("held", |ctx: TaskContext, _: Value| async move {
            while !ctx.lost_lease() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, TaskError>(())
        })
        .expect("register");
    })
}

/// A store that answers every renewal with "you hold none of these leases"
/// (as it would after another claimer recovered them); forwards the rest.
struct NoRenewals(Arc<dyn Store>);

#[async_trait]
impl Forward for NoRenewals {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }

    async fn heartbeat_batch(&self, _params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        Ok(Vec::new())
    }
}
