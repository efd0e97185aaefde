//! Flow control under a fleet: several worker loops claiming at once drain
//! limited keys, and every handler run is accounted for, so a limit broken
//! for an instant (two claimers both counting a free slot) shows as an
//! overlap the handlers saw. And the rate's wait hint, which lets a worker
//! that found only throttled work sleep until the rate admits rather than
//! a whole poll, even when the rate opens before the hint is read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cairnq_core::store::LimitWaitParams;
use cairnq_core::{CairnQ, Capabilities, Limit, Notifications, Store, SubmitOptions, TaskSpec, TaskStatus};
use cairnq_worker::{TaskContext, TaskError, WorkerHandle, WorkerOptions};
use serde_json::{Value, json};

use super::support::{Gauge, count, fresh, quick_options, start};
use crate::BackendFactory;
use crate::forwarding::{Forward, Forwarding};
use crate::support::eventually_within;

const PATIENCE: Duration = Duration::from_secs(120);

/// Worker loops of concurrency 8 on one store, each with the `job`
/// handler `run` (its payload names the task's limit key).
fn fleet<F, Fut>(client: &cairnq_core::CairnQ, workers: usize, run: F) -> Vec<WorkerHandle>
where
    F: Fn(TaskContext, Value) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = Result<(), TaskError>> + Send + 'static,
{
    fleet_with(client, workers, quick_options(), run)
}

/// [`fleet`] with these options.
fn fleet_with<F, Fut>(client: &cairnq_core::CairnQ, workers: usize, options: WorkerOptions, run: F) -> Vec<WorkerHandle>
where
    F: Fn(TaskContext, Value) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = Result<(), TaskError>> + Send + 'static,
{
    (0..workers)
        .map(|_| {
            let run = run.clone();
            start(client, options.clone().concurrency(8), move |w| {
                w.task("job", run).expect("register");
            })
        })
        .collect()
}

/// 300 tasks over 3 keys limited by a `k:*` default of concurrency 2,
/// drained by 4 worker loops of concurrency 8 claiming at once: every
/// handler counts its key's runs in and out, and at no instant do more than
/// 2 of a key run; all 300 succeed.
pub async fn a_fleet_never_runs_more_of_a_key_than_its_limit(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("k:*").concurrency(2)).await.expect("set the limit");
    let keys = ["k:a", "k:b", "k:c"];
    let gauges: Arc<HashMap<String, Arc<Gauge>>> =
        Arc::new(keys.iter().map(|k| (k.to_string(), Gauge::new())).collect());
    let specs: Vec<TaskSpec> = (0..300)
        .map(|i| {
            let key = keys[i % keys.len()];
            TaskSpec::new("job", &json!({ "key": key })).options(SubmitOptions::new().limit_key(key))
        })
        .collect();
    client.submit_many(&specs).await.expect("submit");
    let g = Arc::clone(&gauges);
    let _workers = fleet(&client, 4, move |_ctx: TaskContext, payload: Value| {
        let gauge = payload["key"].as_str().and_then(|k| g.get(k)).cloned();
        async move {
            let gauge = gauge.ok_or_else(|| TaskError::new("no key in the payload"))?;
            gauge.add(1);
            tokio::time::sleep(Duration::from_millis(15)).await;
            gauge.sub(1);
            Ok(())
        }
    });
    eventually_within("all 300 succeed", PATIENCE, || async { count(&client, TaskStatus::Succeeded).await == 300 })
        .await;
    for (key, gauge) in gauges.iter() {
        assert!(gauge.peak() <= 2, "{key} ran {} at once under a limit of 2", gauge.peak());
    }
}

/// A key limited to 20 starts a second with a burst of 1, its 40 tasks
/// drained by 3 worker loops that poll once a minute: by the store's clock
/// at each claim (a claimed row's `updated_at_ms`), no second holds more
/// than 21 starts, and the 40 starts spread over at least 39 intervals of
/// 50 ms. The drain ends long before a poll: a worker whose claim found
/// only throttled work sleeps until the rate admits, not a whole poll.
pub async fn a_rate_limit_paces_the_starts_of_a_fleet(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("paced").rate(20, Duration::from_secs(1))).await.expect("set the limit");
    let specs: Vec<TaskSpec> =
        (0..40).map(|i| TaskSpec::new("job", &i).options(SubmitOptions::new().limit_key("paced"))).collect();
    client.submit_many(&specs).await.expect("submit");
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&starts);
    let polling_rarely = quick_options().poll_interval(Duration::from_secs(60));
    let _workers = fleet_with(&client, 3, polling_rarely, move |ctx: TaskContext, _: Value| {
        s.lock().expect("starts").push(ctx.task().updated_at_ms);
        async { Ok(()) }
    });
    let before_a_poll = Duration::from_secs(30);
    eventually_within("all 40 succeed", before_a_poll, || async { count(&client, TaskStatus::Succeeded).await == 40 })
        .await;
    let mut starts = starts.lock().expect("starts").clone();
    starts.sort_unstable();
    assert_eq!(starts.len(), 40, "every task started once");
    for (i, at) in starts.iter().enumerate() {
        let in_second = starts[i..].iter().take_while(|t| **t <= at + 1_000).count();
        assert!(in_second <= 21, "{in_second} starts in the second from {at}: {starts:?}");
    }
    let span = starts[39] - starts[0];
    assert!(span >= 1_950, "40 starts at 20/s take 39 intervals of 50 ms, took {span} ms: {starts:?}");
    eprintln!("40 starts over {span} ms: {:.1} a second", 39_000.0 / span as f64);
}

/// Issue 25's polling race: a worker without push wakeups (a poll of
/// 20 s) whose claim finds a key's next task held back by its rate (1 a
/// second, burst 1), and whose wait hint reaches the store only after the
/// rate opened (the store answers the hint 1.5 s late, as a loaded one
/// may). The hint counts from the claim, so the opened rate means "claim
/// again now": the second task starts within seconds of the first, not a
/// poll later (a hint read at its own now found nothing held back, and the
/// worker slept the whole 20 s).
pub async fn a_rate_that_opens_before_the_wait_hint_starts_work_without_a_poll(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("slow").rate(1, Duration::from_secs(1)).burst(1)).await.expect("set the limit");
    let specs: Vec<TaskSpec> =
        (0..2).map(|i| TaskSpec::new("job", &i).options(SubmitOptions::new().limit_key("slow"))).collect();
    client.submit_many(&specs).await.expect("submit");
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&starts);
    let late = CairnQ::new(Forwarding(LateHint(fresh.store.clone())));
    let polling = quick_options().poll_interval(Duration::from_secs(20));
    let _worker = start(&late, polling, move |w| {
        w.task("job", move |_ctx: TaskContext, _: Value| {
            s.lock().expect("starts").push(Instant::now());
            async { Ok::<_, TaskError>(()) }
        })
        .expect("register");
    });
    let before_a_poll = Duration::from_secs(12);
    eventually_within("both tasks succeed before a poll", before_a_poll, || async {
        count(&client, TaskStatus::Succeeded).await == 2
    })
    .await;
    let starts = starts.lock().expect("starts").clone();
    assert_eq!(starts.len(), 2, "each task started once");
    let gap = starts[1].duration_since(starts[0]);
    assert!(gap >= Duration::from_millis(900), "the rate spaces the starts a second apart: {gap:?}");
    assert!(gap < Duration::from_secs(8), "the second start waited {gap:?}, as for a poll");
}

/// Pushes nothing (a worker on it only polls) and answers the wait hint
/// 1.5 s late; forwards the rest.
struct LateHint(Arc<dyn Store>);

#[async_trait]
impl Forward for LateHint {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    fn notifications(&self) -> Notifications {
        Notifications::none()
    }

    async fn limit_wait(&self, params: &LimitWaitParams) -> cairnq_core::Result<Option<i64>> {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        self.0.limit_wait(params).await
    }
}

/// A `tenant:*` default of concurrency 1, key A holding 10,000 queued tasks
/// and key B 20 (neither declared on its own), drained by 2 worker loops:
/// B's 20 finish while A still has thousands waiting (A's backlog neither
/// blocks B nor is walked by every claim).
pub async fn a_backlogged_key_starves_no_other_key(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("tenant:*").concurrency(1)).await.expect("set the limit");
    let task = |key: &str| TaskSpec::new("job", &json!({ "key": key })).options(SubmitOptions::new().limit_key(key));
    let mut specs: Vec<TaskSpec> = (0..10_000).map(|_| task("tenant:A")).collect();
    specs.extend((0..20).map(|_| task("tenant:B")));
    client.submit_many(&specs).await.expect("submit");
    let done: Arc<HashMap<String, Arc<Gauge>>> =
        Arc::new(["tenant:A", "tenant:B"].iter().map(|k| (k.to_string(), Gauge::new())).collect());
    let d = Arc::clone(&done);
    let _workers = fleet(&client, 2, move |_ctx: TaskContext, payload: Value| {
        let gauge = payload["key"].as_str().and_then(|k| d.get(k)).cloned();
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            gauge.ok_or_else(|| TaskError::new("no key in the payload"))?.add(1);
            Ok(())
        }
    });
    let b = Arc::clone(&done["tenant:B"]);
    eventually_within("B's 20 finish", PATIENCE, || async { b.current() == 20 }).await;
    let a = done["tenant:A"].current();
    assert!(a < 5_000, "A ran {a} of 10,000 by the time B's 20 finished");
}
