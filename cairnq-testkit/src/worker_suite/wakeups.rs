//! Push wakeups: a store that reports them must complete a watch taken
//! before a change once the change is visible, so idle workers and `wait`
//! react without sleeping out a poll.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, Capabilities, ChangeWatch, Notifications, Signal, Store, TaskStatus, WaitOptions, Wake, Watch,
};
use futures::StreamExt;

use super::support::{fresh, session};
use crate::BackendFactory;
use crate::forwarding::{Forward, Forwarding};

/// On a store whose capabilities report push wakeups, a watch completes
/// after a relevant change even when the change commits before the watch
/// is first awaited (it subscribes when taken): a submit wakes a watch on
/// its queue, a completion wakes a watch on that task. Skipped (with a
/// message) when the store reports no push wakeups.
pub async fn push_wakeups_complete_watches_taken_before_a_change(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let store = fresh.store.clone();
    if !store.capabilities().push_wakeups {
        return eprintln!("skipped: {} stores report no push wakeups", factory.name());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    wakeups_flowing(&client, deadline).await;
    loop {
        let task = client.submit("job", &2).queue("elsewhere").await.expect("submit");
        let watch = store.notifications().watch(&Wake::TaskDone(task.id.clone()));
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
    let (client, fresh) = fresh(factory).await;
    if !fresh.store.capabilities().push_wakeups {
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

/// `client.watch(queues)`: a submit on a watched queue yields
/// `Claimable` for it, and the task's completion `Finished` naming it; a
/// task submitted and finished on another queue yields neither (signals
/// the store cannot name, `Changed`, may come between). The same store
/// without push wakeups still yields ticks, and only ticks. The push part
/// is skipped (with a message) when the store reports no push wakeups.
pub async fn watch_signals_claimable_finished_and_ticks(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let polling = CairnQ::new(Forwarding(NoPush(fresh.store.clone())));
    let mut ticks = polling.watch(["ticking"]).expect("watch").tick_every(Duration::from_millis(20)).expect("tick");
    polling.submit("job", &0).queue("ticking").await.expect("submit");
    for _ in 0..3 {
        assert_eq!(next(&mut ticks).await, Signal::Tick, "a store without push wakeups still ticks");
    }
    assert!(polling.watch(Vec::<String>::new()).is_err() && polling.watch([""]).is_err(), "no queue to watch");
    if !fresh.store.capabilities().push_wakeups {
        return eprintln!("skipped: {} stores report no push wakeups", factory.name());
    }
    wakeups_flowing(&client, tokio::time::Instant::now() + Duration::from_secs(15)).await;
    let mut signals = client.watch(["watched"]).expect("watch").tick_every(Duration::from_secs(3600)).expect("tick");
    let other = client.submit("job", &1).queue("elsewhere").await.expect("submit");
    let task = client.submit("job", &2).queue("watched").await.expect("submit");
    assert_eq!(named(&mut signals).await, Signal::Claimable { queue: "watched".into() });
    settle_on(&client, "elsewhere", &other.id).await;
    settle_on(&client, "watched", &task.id).await;
    assert_eq!(named(&mut signals).await, Signal::Finished { task_id: task.id.clone() }, "not the other queue's");
}

/// Reports no push wakeups and pushes nothing; forwards the rest.
struct NoPush(Arc<dyn Store>);

#[async_trait]
impl Forward for NoPush {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    fn notifications(&self) -> Notifications {
        Notifications::none()
    }
}

/// The next signal, within a generous time.
async fn next(watch: &mut Watch) -> Signal {
    let next = tokio::time::timeout(Duration::from_secs(15), watch.next()).await;
    next.expect("a signal in time").expect("a watch never ends")
}

/// The next signal that names something (not `Changed`, not a tick).
async fn named(watch: &mut Watch) -> Signal {
    loop {
        match next(watch).await {
            Signal::Changed | Signal::Tick => {}
            named => return named,
        }
    }
}

/// Returns once a submit wakes a watch on its queue taken before it. Each
/// round makes a new change: a store's wakeup channel may come up only
/// after the store opened (Postgres's LISTEN connection), and a watch taken
/// while it is down never completes, by design (its sleeper polls). A
/// wakeup must come by `deadline`, not at once.
async fn wakeups_flowing(client: &CairnQ, deadline: tokio::time::Instant) {
    let watcher = session(client, "watcher", Duration::from_secs(60));
    loop {
        let watch = watcher.notifications().watch(&Wake::Queued(vec!["wakeups".into()]));
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
    settle_on(client, "elsewhere", task_id).await;
}

/// Claims the one task queued on `queue` (`task_id`) and completes it.
async fn settle_on(client: &CairnQ, queue: &str, task_id: &str) {
    let worker = session(client, "w", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec![queue.into()])], vec![]).await.expect("claim");
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [task_id]);
    worker.complete(task_id, cairnq_core::Json::null()).await.expect("complete");
}
