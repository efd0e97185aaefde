//! Push wakeups: a waiter wakes when a relevant row commits, and without
//! a listener everything still works by polling.

use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Store, TaskStatus, WaitOptions, Wake};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use serde_json::json;

use crate::support::{dsn, fresh_client};

/// Far longer than any wakeup takes; a wait that reaches it was not woken.
const LONG: Duration = Duration::from_secs(60);

/// Waits until the store's LISTEN connection is up.
pub(crate) async fn until_listening(store: &PostgresStore) {
    let deadline = Instant::now() + LONG;
    while !store.listening() {
        assert!(Instant::now() < deadline, "the listener never came up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts `wait_for_change(wake, LONG)` and returns how long it took once
/// `trigger` has run.
async fn woken_after(store: &PostgresStore, wake: Wake, trigger: impl std::future::Future<Output = ()>) -> Duration {
    let waiter = store.clone();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        cairnq_core::store::wait_for_change(&waiter, &wake, LONG).await;
        started.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    trigger.await;
    waiting.await.expect("waiter")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_and_a_settle_wake_their_waiters() {
    let (client, store, _) = fresh_client().await;
    assert!(store.capabilities().push_wakeups);
    until_listening(&store).await;

    let submitted = woken_after(&store, Wake::Queued(vec!["mail".into()]), async {
        client.submit("send", &json!({})).queue("mail").await.expect("submit");
    });
    assert!(submitted.await < LONG / 2, "the queued notification woke the waiter");

    let task = store
        .claim(&ClaimParams::new("w", 30_000).draw(ClaimDraw::new(vec!["mail".into()]).limit(1)))
        .await
        .expect("claim");
    let id = task[0].id.clone();
    let settled = woken_after(&store, Wake::TaskDone(id.clone()), async {
        store.complete(&SettleParams::new(&id, "w").result(json!(1))).await.expect("complete");
    });
    assert!(settled.await < LONG / 2, "the done notification woke the waiter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_listener_waits_poll_and_results_still_arrive() {
    let (_client, worker_side, schema) = fresh_client().await;
    let polling = PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(&schema).listen(false))
        .await
        .expect("connect");
    assert!(!polling.capabilities().push_wakeups);
    assert!(!polling.listening());
    let client = CairnQ::new(polling);
    let task = client.submit("echo", &json!({"n": 1})).await.expect("submit");

    let settle = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let params = ClaimParams::new("w", 30_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1));
        let id = worker_side.claim(&params).await.expect("claim")[0].id.clone();
        worker_side.complete(&SettleParams::new(&id, "w").result(json!({"n": 1}))).await.expect("complete");
    });
    let done = client.wait(&task.id, &WaitOptions::new().timeout(LONG)).await.expect("wait by polling");
    settle.await.expect("settler");
    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!({"n": 1}).into())));
}

/// A watch taken right after connecting, before the LISTEN connection is
/// up, still ends once it is (the listener says anything may have changed
/// when LISTEN succeeds), so the first idle sleep after a start is not a
/// whole poll. Stores are opened until one is caught before its listener
/// came up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_taken_before_the_listener_is_up_ends_once_it_is() {
    let (_, schema) = crate::support::fresh().await;
    for _ in 0..20 {
        let store = PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(&schema)).await.expect("connect");
        let watch = store.notifications().watch(&Wake::Queued(vec!["early".into()]));
        if store.listening() {
            continue;
        }
        until_listening(&store).await;
        tokio::time::timeout(LONG, watch).await.expect("the watch ends once the listener is up");
        return;
    }
    panic!("the listener was up before every watch: nothing tested");
}
