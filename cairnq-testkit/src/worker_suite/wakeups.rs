//! Push wakeups: a store that reports them must complete a watch taken
//! before a change once the change is visible, so idle workers and `wait`
//! react without sleeping out a poll.

use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, ChangeWatch, Wake};

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
    // Each round makes a new change: a store's wakeup channel may come up
    // only after the store opened (Postgres's LISTEN connection), and a
    // watch taken while it is down never completes, by design (its
    // sleeper polls). A wakeup must come within 15 s, not at once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let watch = store.watch_for_change(&Wake::Queued(vec!["wakeups".into()]));
        client.submit("job", &1).queue("wakeups").await.expect("submit");
        if woke(watch).await {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a submit never woke a watch on its queue taken before it");
    }
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

/// Whether `watch` completes within a second.
async fn woke(watch: ChangeWatch) -> bool {
    tokio::time::timeout(Duration::from_secs(1), watch).await.is_ok()
}

async fn settle(client: &CairnQ, task_id: &str) {
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["elsewhere".into()]));
    assert_eq!(client.claim(&claim).await.expect("claim").len(), 1);
    client.complete(&SettleParams::new(task_id, "w")).await.expect("complete");
}
