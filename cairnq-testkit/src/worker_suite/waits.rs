//! Waits resume the way the protocol means them: by key, the key is
//! resolved again on every poll (a `replace` moves the wait onto the new
//! task; a key with no task yet is waited for), by id a task not visible
//! yet is waited for, and a wait that runs out of time says what the last
//! snapshot suggests (and when the task waits on its flow-control limit).

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{Conflict, Error, Json, Limit, SubmitOptions, TaskStatus, WaitOptions};
use serde_json::json;

use super::support::{fresh, session};
use crate::BackendFactory;

fn within(timeout: Duration) -> WaitOptions {
    WaitOptions::new().timeout(timeout).polling(Duration::from_millis(10), Duration::from_millis(50))
}

/// Claims the task of key `key` as `w` and completes it with `result`.
async fn run_key(client: &cairnq_core::CairnQ, key: &str, result: serde_json::Value) {
    let task = client.get_by_key(key).await.expect("get").expect("the key has a task");
    let worker = session(client, "w", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec![task.queue.clone()]).limit(10)], vec![]).await;
    assert!(claimed.expect("claim").iter().any(|t| t.id == task.id));
    worker.complete(&task.id, json!(result)).await.expect("complete");
}

/// A wait by key started before the key has a task is still waiting when
/// the task is submitted, follows a `replace` onto the new task (never
/// returning the one it replaced), and ends with the new task's result.
pub async fn a_wait_by_key_waits_for_the_key_and_follows_a_replace(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let waiter = {
        let client = client.clone();
        tokio::spawn(async move { client.wait_by_key("order-1", &within(Duration::from_secs(20))).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let first = client.submit("ship", &json!({"v": 1})).key("order-1").await.expect("submit");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let replace = SubmitOptions::new().key("order-1").conflict(Conflict::Replace);
    let second = client.submit("ship", &json!({"v": 2})).options(replace).await.expect("replace");
    assert_ne!(first.id, second.id);
    run_key(&client, "order-1", json!("shipped v2")).await;
    let done = waiter.await.expect("the waiter task").expect("the wait ends with the new task");
    assert_eq!((done.id, done.status), (second.id, TaskStatus::Succeeded));
    assert_eq!(done.result, Some(Json::from(json!("shipped v2"))));
}

/// A wait by id for a task submitted only after the wait began (another
/// process submitting it, say) waits instead of failing at once.
pub async fn a_wait_by_id_waits_for_a_task_not_visible_yet(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let task = SubmitOptions::new().to_new_task("later", Json::null()).expect("a valid task");
    let waiter = {
        let (client, id) = (client.clone(), task.id.clone());
        tokio::spawn(async move { client.wait(&id, &within(Duration::from_secs(20))).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    fresh.store.submit(&task).await.expect("submit the prepared task");
    let worker = session(&client, "w", Duration::from_secs(60));
    worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(1)], vec![]).await.expect("claim");
    worker.complete(&task.id, json!(7)).await.expect("complete");
    let done = waiter.await.expect("the waiter task").expect("the wait ends");
    assert_eq!((done.id, done.status), (task.id, TaskStatus::Succeeded));
}

/// A wait that runs out of time carries the id or key, the last snapshot,
/// and a diagnosis a newcomer can act on.
pub async fn a_timed_out_wait_says_what_the_task_is_doing(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let orphan = client.submit("nobody_runs_this", &json!({})).queue("lonely").await.expect("submit");
    match client.wait(&orphan.id, &within(Duration::from_millis(300))).await {
        Err(Error::TaskTimeout { task_id, key: None, last_seen: Some(seen), diagnosis, .. }) => {
            assert_eq!((task_id.as_deref(), seen.status), (Some(orphan.id.as_str()), TaskStatus::Queued));
            assert!(diagnosis.contains("never claimed"), "{diagnosis}");
            assert!(diagnosis.contains("nobody_runs_this") && diagnosis.contains("lonely"), "{diagnosis}");
        }
        other => panic!("expected TaskTimeout with a snapshot, got {other:?}"),
    }
    let delayed = client.submit("later", &json!({})).delay(Duration::from_secs(3_600)).await.expect("submit");
    let err = client.wait(&delayed.id, &within(Duration::from_millis(200))).await.expect_err("times out");
    assert!(err.to_string().contains("delayed"), "{err}");
    match client.wait_by_key("no-such-key", &within(Duration::from_millis(200))).await {
        Err(Error::TaskTimeout { task_id: None, key: Some(key), last_seen: None, diagnosis, .. }) => {
            assert_eq!(key, "no-such-key");
            assert!(diagnosis.contains("no task has this key yet"), "{diagnosis}");
        }
        other => panic!("expected TaskTimeout by key, got {other:?}"),
    }
}

/// A timed-out wait on a running task names the worker running it and the
/// attempt; on a task queued again after a failed attempt, the attempt it
/// waits for.
pub async fn a_timed_out_wait_names_the_worker_or_the_next_attempt(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let task = client.submit("diagnosed", &json!({})).queue("diag").await.expect("submit");
    let worker = session(&client, "w-diag", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["diag".into()]).limit(1)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), 1);
    let running = client.wait(&task.id, &within(Duration::from_millis(200))).await.expect_err("times out");
    let text = running.to_string();
    assert!(text.contains("running on worker w-diag (attempt 1 of 3"), "{text}");
    let envelope = cairnq_core::ErrorEnvelope::new(cairnq_core::codes::TASK_ERROR, "the attempt failed").to_json();
    worker.fail(&task.id, envelope, Some(Duration::ZERO)).await.expect("fail, to retry");
    match client.wait(&task.id, &within(Duration::from_millis(200))).await {
        Err(Error::TaskTimeout { last_seen: Some(seen), diagnosis, .. }) => {
            assert_eq!((seen.status, seen.attempt), (TaskStatus::Queued, 1));
            assert!(diagnosis.starts_with("waiting for attempt 2 of 3 after a failure"), "{diagnosis}");
            assert!(diagnosis.contains("\"diagnosed\"") && diagnosis.contains("\"diag\""), "{diagnosis}");
        }
        other => panic!("expected TaskTimeout with a snapshot, got {other:?}"),
    }
}

/// A timed-out wait on a queued task its limit holds back says so: its
/// key runs all its concurrency allows (named with the prefix default that
/// applies), or its rate admits the next start only later. A task of a
/// limited key with room left is diagnosed as any other.
pub async fn a_timed_out_wait_says_when_the_task_waits_on_its_limit(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("tenant:*").concurrency(1)).await.expect("set a limit");
    client.set_limit(&Limit::new("hourly").rate(1, Duration::from_secs(3_600))).await.expect("set a limit");
    let roomy = client.submit("limited", &json!({})).queue("roomy").limit_key("tenant:9").await.expect("submit");
    let worker = session(&client, "w-limits", Duration::from_secs(60));
    for key in ["tenant:7", "hourly"] {
        let mut ids = Vec::new();
        for _ in 0..2 {
            ids.push(client.submit("limited", &json!({})).queue("held").limit_key(key).await.expect("submit").id);
        }
        let claimed = worker.claim(vec![ClaimDraw::new(vec!["held".into()]).limit(5)], vec![]).await;
        let claimed = claimed.expect("claim");
        assert_eq!(claimed.len(), 1, "{key}: the limit admits one");
        let waiting = ids.iter().find(|id| **id != claimed[0].id).expect("one task waits");
        match client.wait(waiting, &within(Duration::from_millis(200))).await {
            Err(Error::TaskTimeout { diagnosis, .. }) => {
                assert!(diagnosis.starts_with("waiting on its limit"), "{key}: {diagnosis}");
                assert!(diagnosis.contains(&format!("{key:?}")), "{key}: {diagnosis}");
                if key == "hourly" {
                    assert!(diagnosis.contains("1 starts per 1h") && diagnosis.contains("next in 59"), "{diagnosis}");
                } else {
                    assert!(diagnosis.contains("runs 1 of the 1 the limit \"tenant:*\" allows"), "{diagnosis}");
                }
            }
            other => panic!("expected TaskTimeout, got {other:?}"),
        }
    }
    let err = client.wait(&roomy.id, &within(Duration::from_millis(200))).await.expect_err("times out");
    assert!(err.to_string().contains("never claimed"), "room left under its limit: {err}");
}
