//! What the shared suite cannot pin on [`MemoryStore`] because it runs on
//! the wall clock: the exact millisecond boundaries of leases, delays and
//! the purge cutoff (on a clock the test sets), and the rules no scenario
//! can reach — rollback of a failed write, repair of a row no operation of
//! this store would leave.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use cairnq_core::store::{
    CancelParams, ClaimDraw, ClaimParams, CountQueuedParams, GetParams, HeartbeatBatchParams, NewTask, ProbeParams,
    ProgressParams, PurgeFilter, RepairParams, SettleParams, StatsParams, SubmitManyParams,
};
use cairnq_core::{Clock, Conflict, Error, Json, Store, SubmitOptions, Task, TaskSelector, TaskStatus};

use super::MemoryStore;

/// A clock the test moves by hand.
#[derive(Debug)]
struct ManualClock(AtomicI64);

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn store_at(now_ms: i64) -> (MemoryStore, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock(AtomicI64::new(now_ms)));
    (MemoryStore::with_clock(clock.clone()), clock)
}

fn new_task(options: SubmitOptions) -> NewTask {
    options.to_new_task("job", Json::empty_object()).expect("valid options")
}

fn claim_one(worker: &str, lease_ms: i64) -> ClaimParams {
    ClaimParams::new(worker, lease_ms).draw(ClaimDraw::new(vec!["default".into()]))
}

async fn row(store: &MemoryStore, id: &str) -> Task {
    store.get(&GetParams::new(TaskSelector::Id(id.into()))).await.expect("get").expect("the row exists")
}

#[tokio::test]
async fn leases_end_at_their_millisecond_and_recovery_takes_them_then() {
    let (store, clock) = store_at(1_000);
    let task = store.submit(&new_task(SubmitOptions::new())).await.expect("submit");
    assert_eq!(store.claim(&claim_one("w", 100)).await.expect("claim")[0].lease_until_ms, Some(1_100));
    clock.0.store(1_099, Ordering::SeqCst);
    let probe = ProbeParams::new(vec!["default".into()]);
    assert!(!store.claimable(&probe).await.expect("probe"), "nothing due, no lease over yet");
    store.progress(&ProgressParams::new(&task.id, "w").progress(0.5)).await.expect("still held at 1099");
    clock.0.store(1_100, Ordering::SeqCst);
    let lost = store.progress(&ProgressParams::new(&task.id, "w").progress(0.6)).await;
    assert!(matches!(lost, Err(Error::LostLease { .. })), "a lease ending now is no longer held: {lost:?}");
    assert!(store.claimable(&probe).await.expect("probe"), "a lease ending now has expired");
    let again = store.claim(&claim_one("w2", 100)).await.expect("claim");
    assert_eq!((again[0].attempt, again[0].run_at_ms, again[0].progress), (2, 1_100, None), "requeued due now");
}

#[tokio::test]
async fn a_delay_ends_at_its_millisecond_and_the_purge_cutoff_is_strict() {
    let (store, clock) = store_at(3_000);
    let task = store.submit(&new_task(SubmitOptions::new().delay(Duration::from_millis(10)))).await.expect("submit");
    clock.0.store(3_009, Ordering::SeqCst);
    assert!(store.claim(&claim_one("w", 1_000)).await.expect("claim").is_empty(), "not due before run_at");
    clock.0.store(3_010, Ordering::SeqCst);
    assert_eq!(store.claim(&claim_one("w", 1_000)).await.expect("claim").len(), 1, "due at run_at");
    store.complete(&SettleParams::new(&task.id, "w")).await.expect("complete");
    assert_eq!(row(&store, &task.id).await.completed_at_ms, Some(3_010));
    clock.0.store(3_510, Ordering::SeqCst);
    let purge = PurgeFilter::new().older_than(Duration::from_millis(500));
    assert!(store.purge(&purge).await.expect("purge").is_empty(), "completed exactly at the cutoff is kept");
    clock.0.store(3_511, Ordering::SeqCst);
    assert_eq!(store.purge(&purge).await.expect("purge"), [task.id]);
}

#[tokio::test]
async fn a_second_cancel_keeps_the_first_request_time() {
    let (store, clock) = store_at(5_000);
    let task = store.submit(&new_task(SubmitOptions::new())).await.expect("submit");
    store.claim(&claim_one("w", 60_000)).await.expect("claim");
    let cancel = CancelParams::new(TaskSelector::Id(task.id.clone()));
    store.cancel(&cancel).await.expect("cancel");
    clock.0.store(5_007, Ordering::SeqCst);
    let again = store.cancel(&cancel).await.expect("cancel").expect("still running");
    assert_eq!((again.cancel_requested_at_ms, again.updated_at_ms), (Some(5_000), 5_007));
}

#[tokio::test]
async fn counts_are_bounded_and_heartbeats_answer_each_id_once() {
    let (store, _clock) = store_at(1);
    for _ in 0..5 {
        store.submit(&new_task(SubmitOptions::new())).await.expect("submit");
    }
    let count = |at_most| CountQueuedParams::new("default", at_most);
    assert_eq!(store.count_queued(&count(3)).await.expect("count"), 3, "at most the bound");
    assert_eq!(store.count_queued(&count(10)).await.expect("count"), 5);
    let claimed = store.claim(&claim_one("w", 1_000)).await.expect("claim");
    let ids = vec![claimed[0].id.clone(), "task_missing".into(), claimed[0].id.clone()];
    let held = store.heartbeat_batch(&HeartbeatBatchParams::new("w", ids)).await.expect("heartbeat_batch");
    assert_eq!(held.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), [claimed[0].id.as_str()]);
}

#[tokio::test]
async fn a_failed_write_leaves_every_row_key_and_index_as_it_was() {
    let (store, _clock) = store_at(1);
    let kept = store.submit(&new_task(SubmitOptions::new().key("k"))).await.expect("submit");
    let mut replace = new_task(SubmitOptions::new().key("k").conflict(Conflict::Replace));
    let mut clash = new_task(SubmitOptions::new());
    clash.id = kept.id.clone();
    replace.id = "task_replacement".into();
    let refused = store.submit_many(&SubmitManyParams::new(vec![new_task(SubmitOptions::new()), replace, clash])).await;
    assert!(matches!(refused, Err(Error::Storage { .. })), "a second row with one id is refused: {refused:?}");
    let by_key = store.get(&GetParams::new(TaskSelector::Key("k".into()))).await.expect("get").expect("the key");
    assert_eq!((by_key.id.as_str(), by_key.status), (kept.id.as_str(), TaskStatus::Queued), "the replace is undone");
    let counts = store.stats(&StatsParams::new()).await.expect("stats");
    assert_eq!(counts.iter().map(|c| (c.status, c.count)).collect::<Vec<_>>(), [(Some(TaskStatus::Queued), 1)]);
    let claimed =
        store.claim(&ClaimParams::new("w", 1_000).draw(ClaimDraw::new(vec!["default".into()]).limit(5))).await;
    assert_eq!(claimed.expect("claim").len(), 1, "the claim index holds only the kept row");
}

#[tokio::test]
async fn repair_hands_a_running_row_without_a_lease_to_lease_recovery() {
    let (store, _clock) = store_at(1);
    let mut planted = new_task(SubmitOptions::new().queue("q")).inserted_row(1);
    planted.status = TaskStatus::Running;
    planted.attempt = 1;
    planted.worker_id = Some("gone".into());
    store.write(|txn| txn.insert(planted.clone())).expect("plant a row no operation would write");
    let probe = ProbeParams::new(vec!["q".into()]);
    assert!(!store.claimable(&probe).await.expect("probe"), "a row without a lease never expires by itself");
    let elsewhere = store.repair(&RepairParams::new(vec!["other".into()])).await.expect("repair");
    assert!(elsewhere.is_empty(), "only the queues asked are repaired");
    let repaired = store.repair(&RepairParams::new(vec!["q".into()])).await.expect("repair");
    assert_eq!((repaired.expired, repaired.scheduled), (vec![planted.id.clone()], vec![]));
    assert!(store.claimable(&probe).await.expect("probe"), "its lease ends now");
    let claim = ClaimParams::new("w", 1_000).draw(ClaimDraw::new(vec!["q".into()]));
    let again = store.claim(&claim).await.expect("claim");
    assert_eq!((again[0].id.as_str(), again[0].attempt), (planted.id.as_str(), 2), "recovered, then claimed");
}
