//! Push wakeups: a store that reports them must complete a watch taken
//! before a change once the change is visible, so idle workers and `wait`
//! react without sleeping out a poll.

use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, ChangeWatch, TaskStatus, WaitOptions, Wake};

use super::support::fresh;
use crate::BackendFactory;

/// On a store whose capabilities report push wakeups, a watch completes
/// after a relevant change even when the change commits before the watch
/// is first awaited (it subscribes when taken): a submit wakes a watch on
/// its queue, a completion wakes a watch on that task. Skipped (with a
/// message) when the store reports no push wakeups.
pub async fn push_wakeups_complete_watches_taken_before_a_change(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let store = client.store().clone();
    if !store.capabilities().push_wakeups {
        return eprintln!("skipped: {} stores report no push wakeups", factory.name());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    wakeups_flowing(&client, deadline).await;
    loop {
        let task = client.submit("job", &2).queue("elsewhere").await.expect("submit");
        let watch = store.watch_for_change(&Wake::TaskDone(task.id.clone()));
        settle(&client, &task.id).await;
        if woke(watch).await {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "settling a task never woke a watch on it taken before");
    }
}

/// A `wait` (by id and by key) on a store with push wakeups ends when the
/// task finishes, not when a poll comes round: with the first poll a
/// minute away and a 30 s timeout, both waits return the finished task
/// well before the timeout (a wait that slept to its deadline would read
/// the finished row too, so only the time tells; the margin is 100x what
/// a wakeup takes). Skipped (with a message) when the store reports no
/// push wakeups.
pub async fn waits_are_woken_by_the_finish_not_the_poll(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    if !client.store().capabilities().push_wakeups {
        return eprintln!("skipped: {} stores report no push wakeups", factory.name());
    }
    wakeups_flowing(&client, tokio::time::Instant::now() + Duration::from_secs(15)).await;
    let slow_polls =
        WaitOptions::new().timeout(Duration::from_secs(30)).polling(Duration::from_secs(60), Duration::from_secs(60));
    for by_key in [false, true] {
        let task = client.submit("job", &3).queue("elsewhere").key(format!("wake-{by_key}")).await.expect("submit");
        let waiter = {
            let (client, id) = (client.clone(), task.id.clone());
            tokio::spawn(async move {
                if by_key {
                    client.wait_by_key("wake-true", &slow_polls).await
                } else {
                    client.wait(&id, &slow_polls).await
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        settle(&client, &task.id).await;
        let settled = tokio::time::Instant::now();
        let done = waiter.await.expect("the waiter").expect("the wait ends with the task, not a timeout");
        assert!(settled.elapsed() < Duration::from_secs(15), "by key: {by_key}: the wait slept on to its deadline");
        assert_eq!((done.id, done.status), (task.id, TaskStatus::Succeeded), "by key: {by_key}");
    }
}

/// Returns once a submit wakes a watch on its queue taken before it. Each
/// round makes a new change: a store's wakeup channel may come up only
/// after the store opened (Postgres's LISTEN connection), and a watch taken
/// while it is down never completes, by design (its sleeper polls). A
/// wakeup must come by `deadline`, not at once.
async fn wakeups_flowing(client: &CairnQ, deadline: tokio::time::Instant) {
    loop {
        let watch = client.store().watch_for_change(&Wake::Queued(vec!["wakeups".into()]));
        client.submit("job", &1).queue("wakeups").await.expect("submit");
        if woke(watch).await {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "a submit never woke a watch on its queue taken before it");
    }
}

/// Whether `watch` completes within a second.
async fn woke(watch: ChangeWatch) -> bool {
    tokio::time::timeout(Duration::from_secs(1), watch).await.is_ok()
}

async fn settle(client: &CairnQ, task_id: &str) {
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["elsewhere".into()]));
    assert_eq!(client.claim(&claim).await.expect("claim").len(), 1);
    client.complete(&SettleParams::new(task_id, "w")).await.expect("complete");
}
