//! The client-side gates the worker shares: backpressure (from the API and
//! from inside handlers) and the retention sweeper; what a submit (or a
//! typed call) writes; and the times it refuses to write.

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    Backpressure, CairnQ, Error, ErrorEnvelope, ErrorKind, Json, MAX_DELAY, Retention, SubmitOptions, TaskDef,
    TaskSpec, TaskStatus,
};
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};

use super::support::{count, eventually, finished, fresh, quick_options, session, some, start};
use crate::BackendFactory;

/// A full queue refuses a submit with QueueFull after the max wait, writing
/// nothing; a submit from inside a handler is gated the same way, and its
/// children are wired to their parent.
pub async fn backpressure_refuses_submits_to_a_full_queue(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let gate = Backpressure::new().queue("bp", 3).max_wait(Duration::from_millis(200));
    let gated = client.clone().with_backpressure(gate.clone());
    for i in 0..3 {
        gated.submit("job", &i).queue("bp").await.expect("room for three");
    }
    match gated.submit("job", &3).queue("bp").await {
        Err(Error::QueueFull { queue, max_depth, waited }) => {
            let waited_enough = waited >= Duration::from_millis(200);
            assert!(queue == "bp" && max_depth == 3 && waited_enough, "{queue} {max_depth} {waited:?}")
        }
        other => panic!("expected QueueFull, got {other:?}"),
    }
    assert_eq!(count(&client, TaskStatus::Queued).await, 3, "the refused submit wrote nothing");
    gated.submit("job", &4).queue("other").await.expect("other queues are not gated");
    let _worker = start(&client, quick_options().backpressure(gate), |w| {
        w.task("parent", |ctx: TaskContext, _: Value| async move {
            let refused = ctx.submit_named("job", &5).queue("bp").await.err().map(|e| e.kind());
            Ok::<_, TaskError>(refused.map(ErrorKind::as_str))
        })
        .expect("register");
    });
    let parent = client.submit("parent", &json!({})).await.expect("submit");
    assert_eq!(finished(&client, &parent.id).await.result, some(json!("QueueFull")));
}

/// Retention purges what its rules match once they are old enough, in
/// batches until the backlog is gone, and leaves everything else; the
/// background sweeper does the same on its interval; a retention without
/// rules is refused.
pub async fn retention_sweeps_by_rule(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    settle_some(&client).await;
    let keep_failed = Retention::new()
        .succeeded(Duration::ZERO)
        .failed(Duration::from_secs(3_600))
        .rule(cairnq_core::PurgeFilter::new().status(TaskStatus::Canceled).queue("scratch").limit(2));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let sweeper = keep_failed.sweeper(fresh.store.clone()).expect("valid rules");
    assert_eq!(sweeper.sweep_once().await.expect("sweep"), 9, "6 succeeded and 3 canceled on scratch");
    assert_eq!(count(&client, TaskStatus::Succeeded).await, 0);
    assert_eq!(count(&client, TaskStatus::Failed).await, 2, "failed ones are kept for an hour");
    assert_eq!(count(&client, TaskStatus::Queued).await, 1, "live tasks are never purged");
    let all = Retention::new().failed(Duration::ZERO).interval(Duration::from_millis(20));
    let _swept = client.clone().with_retention(all).expect("valid rules");
    eventually("the background sweeper purges failed tasks", || async {
        count(&client, TaskStatus::Failed).await == 0
    })
    .await;
    let bad = Retention::new().rule(cairnq_core::PurgeFilter::new().status(TaskStatus::Queued));
    assert!(matches!(bad.sweeper(fresh.store.clone()), Err(Error::Validation { field: "status", .. })));
    let nothing = Retention::new().sweeper(fresh.store.clone());
    assert!(matches!(nothing, Err(Error::Validation { field: "rules", .. })), "a retention without rules");
}

/// 6 succeeded, 2 failed, 3 canceled on `scratch`, 1 queued.
async fn settle_some(client: &CairnQ) {
    let ids: Vec<String> = submit_rows(client, 8, "default").await;
    let worker = session(client, "w", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(8)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), 8);
    for id in &ids[..6] {
        worker.succeed(id, json!(1)).await.expect("succeed");
    }
    let envelope = ErrorEnvelope::new("handler_error", "no").error_type("E").to_value();
    for id in &ids[6..] {
        worker.fail(id, envelope.clone(), None).await.expect("fail");
    }
    for id in submit_rows(client, 3, "scratch").await {
        client.cancel(&id).await.expect("cancel");
    }
    client.submit("live", &json!({})).await.expect("submit");
}

async fn submit_rows(client: &CairnQ, n: usize, queue: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(client.submit("row", &i).queue(queue).await.expect("submit").id);
    }
    ids
}

/// What `submit` and `submit_many` return is exactly the row the store
/// holds afterwards, every option set (a backend may build the answer
/// from what it inserted rather than read it back).
pub async fn a_submit_returns_the_row_it_wrote(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let parent = client.submit("parent", &json!([1, 2.5, "x"])).await.expect("submit");
    let options = SubmitOptions::new()
        .queue("q2")
        .priority(7)
        .max_attempts(5)
        .delay(Duration::from_millis(60_000))
        .metadata(json!({"tenant": "t1", "n": 1.0}))
        .parent_id(&parent.id)
        .root_id(&parent.id)
        .correlation_id("corr-1")
        .key("k-1");
    let child = client.submit("child", &json!({"deep": {"a": [null, true]}})).options(options).await.expect("submit");
    let busy = SubmitOptions::new()
        .queue("q3")
        .priority(-2)
        .delay(Duration::from_millis(5))
        .metadata(json!({"m": [1]}))
        .correlation_id("c");
    let specs = [
        TaskSpec::new("m", &json!(u64::MAX)),
        TaskSpec::new("m", &json!({"text": "é\u{1F600}\"q\""})).options(busy),
        TaskSpec::new("m", &json!(-1.5e300)),
        TaskSpec::new("m", &json!("s")).options(SubmitOptions::new().key("k-2")),
        TaskSpec::new("m", &json!(null)),
        TaskSpec::new("m", &json!([])).options(SubmitOptions::new().parent_id(&parent.id)),
    ];
    let many = client.submit_many(&specs).await.expect("submit_many");
    let payloads =
        [json!(u64::MAX), json!({"text": "é\u{1F600}\"q\""}), json!(-1.5e300), json!("s"), json!(null), json!([])];
    assert_eq!(many.iter().map(|t| t.payload.clone()).collect::<Vec<_>>(), payloads, "in the order given");
    for written in [parent, child].into_iter().chain(many) {
        let stored = client.get(&written.id).await.expect("get").expect("row");
        assert_eq!(written, stored, "submit answered with a row the store does not hold");
    }
}

/// Doubles a number, typed.
const DOUBLE: TaskDef<i64, i64> = TaskDef::new("double");

/// `TaskDef::call` takes the submit options of a plain submit, and they
/// reach the stored row: the typed result comes back, and the row found
/// by its key has the queue, priority, attempts and metadata asked for.
pub async fn a_typed_call_writes_its_submit_options(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let _worker = start(&client, quick_options().queues(["typed"]), |w| {
        w.task(DOUBLE, |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n * 2) }).expect("register");
    });
    let doubled = DOUBLE
        .call(&client, &21)
        .key("double:21")
        .priority(7)
        .queue("typed")
        .max_attempts(2)
        .metadata(json!({"asked": "by a call"}))
        .timeout(Duration::from_secs(60))
        .await
        .expect("the typed result");
    assert_eq!(doubled, 42);
    let row = client.get_by_key("double:21").await.expect("get").expect("the key names the task");
    assert_eq!((row.name.as_str(), row.queue.as_str(), row.priority, row.max_attempts), ("double", "typed", 7, 2));
    assert_eq!((row.status, row.result), (TaskStatus::Succeeded, some(json!(42))));
    assert_eq!(row.metadata.decode::<Value>().expect("metadata")["asked"], "by a call");
    assert_eq!(row.payload, Json::from(json!(21)));
}

/// A delay or lease that would put a time past what the protocol stores
/// (64-bit epoch milliseconds) is refused with the same `ValidationError`
/// on every backend, before anything is written: a submit, a task of a
/// `submit_many`, a retry delay, a claim's lease. The longest delay allowed
/// ([`MAX_DELAY`]) is stored exactly and read back.
pub async fn times_past_the_protocols_range_are_refused_before_any_write(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let max_ms = i64::try_from(MAX_DELAY.as_millis()).expect("MAX_DELAY fits in i64");
    let i64_max = Duration::from_millis(u64::try_from(i64::MAX).expect("positive"));
    for delay in [MAX_DELAY + Duration::from_millis(1), i64_max, Duration::MAX] {
        let alone = client.submit("later", &json!({})).delay(delay).await.map(drop);
        let later = TaskSpec::new("later", &2).options(SubmitOptions::new().delay(delay));
        let in_batch = client.submit_many(&[TaskSpec::new("now", &1), later]).await.map(drop);
        for refused in [alone, in_batch] {
            assert!(matches!(&refused, Err(Error::Validation { field: "delay", .. })), "{delay:?}: {refused:?}");
        }
    }
    assert_eq!(count(&client, TaskStatus::Queued).await, 0, "the refused submits wrote nothing");
    let longest = client.submit("later", &json!({})).delay(MAX_DELAY).await.expect("the longest delay fits");
    let stored = client.get(&longest.id).await.expect("get reads the row").expect("the row");
    assert_eq!(stored.run_at_ms - stored.created_at_ms, max_ms, "run_at is now + MAX_DELAY, exactly");

    let task = client.submit("job", &json!({})).await.expect("submit");
    for lease in [MAX_DELAY + Duration::from_millis(1), i64_max, Duration::MAX] {
        let refused = client.worker_session("w", lease).map(drop);
        assert!(matches!(&refused, Err(Error::Validation { field: "lease", .. })), "{refused:?}");
    }
    let worker = session(&client, "w", Duration::from_secs(30));
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()])], vec![]).await.expect("claim");
    assert_eq!(claimed.len(), 1, "the job is due, the later task is not");
    let envelope = ErrorEnvelope::new("flaky", "try again").to_json();
    let fail = |delay| worker.fail(&task.id, envelope.clone(), Some(delay));
    for delay in [MAX_DELAY + Duration::from_millis(1), i64_max, Duration::MAX] {
        let refused = fail(delay).await;
        assert!(matches!(&refused, Err(Error::Validation { field: "retry_after", .. })), "{refused:?}");
    }
    let running = client.get(&task.id).await.expect("get").expect("the row");
    assert_eq!(running.status, TaskStatus::Running, "the refused fails changed nothing");
    let requeued = fail(MAX_DELAY).await.expect("the longest retry delay fits");
    let stored = client.get(&task.id).await.expect("get reads the row").expect("the row");
    assert_eq!((stored.status, stored.run_at_ms), (TaskStatus::Queued, requeued.run_at_ms));
    assert_eq!(stored.run_at_ms - stored.updated_at_ms, max_ms, "run_at is now + the delay, exactly");
}
