//! The operations on a real server: a task's whole life, the database
//! clock, values Postgres cannot store, and claims and purges whatever plan
//! the statistics give (keyed producers, concurrent claimers, closed stores
//! and batches refused whole are in the shared suite, `tests/conformance.rs`).

use cairnq_core::store::{ClaimDraw, ClaimParams, HeartbeatParams, ProgressParams, SettleParams};
use cairnq_core::{ErrorKind, ListFilter, PurgeFilter, Store, TaskSpec, TaskStatus};
use serde_json::json;

use crate::support::{count, dsn, fresh_client, raw};

fn claim_one(worker: &str, queue: &str) -> ClaimParams {
    ClaimParams::new(worker, 30_000).draw(ClaimDraw::new(vec![queue.to_string()]).limit(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_lives_submit_claim_progress_complete_purge() {
    let (client, store, _) = fresh_client().await;
    let task = client.submit("resize", &json!({"w": 640})).queue("images").priority(3).await.expect("submit");
    assert_eq!((task.status, task.attempt, task.root_id.as_deref()), (TaskStatus::Queued, 0, Some(&*task.id)));

    let claimed = store.claim(&claim_one("w1", "images")).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!((claimed[0].status, claimed[0].attempt), (TaskStatus::Running, 1));
    assert!(claimed[0].lease_until_ms.is_some_and(|l| l > claimed[0].updated_at_ms));

    store.heartbeat(&HeartbeatParams::new(&task.id, "w1").lease_ms(60_000)).await.expect("heartbeat");
    let lost =
        store.heartbeat(&HeartbeatParams::new(&task.id, "w2").lease_ms(60_000)).await.expect_err("not the owner");
    assert_eq!(lost.kind(), ErrorKind::LostLease);
    let progressed =
        store.progress(&ProgressParams::new(&task.id, "w1").progress(0.5).message("half")).await.expect("progress");
    assert_eq!((progressed.progress, progressed.message.as_deref()), (Some(0.5), Some("half")));

    let done = store.complete(&SettleParams::new(&task.id, "w1").result(json!({"ok": true}))).await.expect("complete");
    assert_eq!(
        (done.status, done.result, done.progress),
        (TaskStatus::Succeeded, Some(json!({"ok": true}).into()), Some(1.0))
    );
    assert!(done.lease_until_ms.is_none() && done.completed_at_ms.is_some());

    let stats = client.stats(Some("images")).await.expect("stats");
    assert_eq!(stats["images"].succeeded, 1);
    let listed = client.list(&ListFilter::new().status(TaskStatus::Succeeded).queue("images")).await.expect("list");
    assert_eq!(listed.tasks.len(), 1);
    assert_eq!(client.purge(&PurgeFilter::new()).await.expect("purge"), vec![task.id.clone()]);
    assert!(client.get(&task.id).await.expect("get").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_come_from_the_database_clock() {
    let (client, store, _) = fresh_client().await;
    let admin = raw(&dsn()).await;
    let before = count(&admin, "select floor(extract(epoch from clock_timestamp()) * 1000)::bigint").await;
    let task = client.submit("t", &json!({})).delay(std::time::Duration::from_secs(60)).await.expect("submit");
    let after = count(&admin, "select floor(extract(epoch from clock_timestamp()) * 1000)::bigint").await;
    assert!((before..=after).contains(&task.created_at_ms), "{before} <= {} <= {after}", task.created_at_ms);
    assert_eq!(task.run_at_ms, task.created_at_ms + 60_000);
    assert!(store.claim(&claim_one("w", "default")).await.expect("claim").is_empty(), "not due for a minute");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_in_json_is_refused_before_anything_is_written() {
    let (client, store, schema) = fresh_client().await;
    let err = client.submit("t", &json!({"text": "a\u{0}b"})).await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::SerializationError, "{err}");
    let err = client.submit("t", &json!({})).metadata(json!({"k\u{0}": 1})).await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::SerializationError, "{err}");
    let batch = [TaskSpec::new("a", &json!(1)), TaskSpec::new("b", &json!("\u{0}"))];
    let err = client.submit_many(&batch).await.expect_err("the second item is refused");
    assert_eq!(err.kind(), ErrorKind::SerializationError, "{err}");
    let admin = raw(&dsn()).await;
    assert_eq!(count(&admin, &format!("select count(*) from {schema}.cairnq_tasks")).await, 0);

    let task = client.submit("t", &json!({})).await.expect("submit");
    store.claim(&claim_one("w", "default")).await.expect("claim");
    let err = store.complete(&SettleParams::new(&task.id, "w").result(json!(["\u{0}"]))).await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::SerializationError, "{err}");
    let still = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(still.status, TaskStatus::Running, "the refused result changed nothing");
}

/// Planner statistics that know the rows are there (as autovacuum soon
/// makes them) must not change what a claim or a purge takes: each takes
/// exactly the rows due, up to its limit, whatever join the planner picks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_and_purges_take_every_due_row_under_any_plan() {
    let (client, store, schema) = fresh_client().await;
    let specs: Vec<_> = (0..256).map(|i| TaskSpec::new("embed", &json!(i))).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let admin = raw(&dsn()).await;
    admin.batch_execute(&format!("analyze {schema}.cairnq_tasks")).await.expect("analyze");
    let all = ClaimParams::new("w", 30_000)
        .draw(ClaimDraw::new(vec!["default".into()]).names(vec!["embed".into()]).limit(300));
    let claimed = store.claim(&all).await.expect("claim");
    assert_eq!(claimed.len(), 256);
    for task in &claimed {
        store.complete(&SettleParams::new(&task.id, "w").result(json!(1))).await.expect("complete");
    }
    admin.batch_execute(&format!("analyze {schema}.cairnq_tasks")).await.expect("analyze");
    assert_eq!(client.purge(&PurgeFilter::new().limit(200)).await.expect("purge").len(), 200);
}
