//! Operation semantics that depend on SQLite specifics: the clock the SDK
//! supplies, storage classes, RETURNING, push wakeups, corrupt rows.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams, FailParams, HeartbeatBatchParams, ProgressParams, SettleParams};
use cairnq_core::{CairnQ, Clock, ErrorEnvelope, ErrorKind, PurgeFilter, Store, TaskStatus, Wake};
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use cairnq_testkit::support::ByParams;

use crate::common::{Fresh, fresh_path};

/// A clock tests move by hand.
#[derive(Debug)]
struct ManualClock(AtomicI64);

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl ManualClock {
    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

async fn with_clock() -> (Fresh, CairnQ, Arc<ManualClock>) {
    let fresh = fresh_path();
    let clock = Arc::new(ManualClock(AtomicI64::new(1_700_000_000_000)));
    let options = SqliteOptions::new().clock(Arc::clone(&clock) as Arc<dyn Clock>);
    let store = SqliteStore::open_with(&fresh.path, options).await.expect("open");
    (fresh, CairnQ::new(store), clock)
}

fn claim_one(worker: &str, lease_ms: i64) -> ClaimParams {
    ClaimParams::new(worker, lease_ms).draw(ClaimDraw::new(vec!["default".into()]).limit(1))
}

#[tokio::test]
async fn succeed_reports_progress_as_a_float_and_clears_the_lease() {
    let (_fresh, client, _clock) = with_clock().await;
    let task = client.submit("job", &serde_json::json!({})).await.expect("submit");
    client.claim(&claim_one("w", 1_000)).await.expect("claim");
    let done =
        client.succeed(&SettleParams::new(&task.id, "w").result(serde_json::json!({"ok": true}))).await.expect("ok");
    assert_eq!(done.progress, Some(1.0));
    assert_eq!(done.lease_until_ms, None);
    assert_eq!(done.worker_id.as_deref(), Some("w"));
    let read = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(read.progress, Some(1.0));
    assert_eq!(read.result, Some(serde_json::json!({"ok": true}).into()));
}

#[tokio::test]
async fn fail_requeue_clears_worker_progress_message_and_the_final_failure_keeps_them() {
    let (_fresh, client, clock) = with_clock().await;
    let task = client.submit("job", &serde_json::json!({})).max_attempts(2).await.expect("submit");
    let error = ErrorEnvelope::retryable("handler_error", "boom").error_type("Boom").to_value();
    for attempt in 1..=2 {
        client.claim(&claim_one("w", 1_000)).await.expect("claim");
        let progress = ProgressParams::new(&task.id, "w").progress(0.5).message("halfway");
        client.progress(&progress).await.expect("progress");
        let failed = client
            .fail(&FailParams::new(&task.id, "w").error(error.clone()).retryable(true).delay_ms(250))
            .await
            .expect("fail");
        assert_eq!(failed.error, Some(error.clone().into()));
        assert_eq!(failed.lease_until_ms, None);
        if attempt == 1 {
            assert_eq!(failed.status, TaskStatus::Queued);
            assert_eq!((failed.worker_id, failed.progress, failed.message), (None, None, None));
            assert_eq!(failed.run_at_ms, clock.now_ms() + 250);
            assert_eq!(failed.completed_at_ms, None);
            clock.advance(250);
        } else {
            assert_eq!(failed.status, TaskStatus::Failed);
            assert_eq!(failed.worker_id.as_deref(), Some("w"));
            assert_eq!((failed.progress, failed.message.as_deref()), (Some(0.5), Some("halfway")));
            assert_eq!(failed.completed_at_ms, Some(clock.now_ms()));
        }
    }
}

#[tokio::test]
async fn lease_recovery_cancels_requeues_or_fails_with_the_lease_expired_envelope() {
    let (_fresh, client, clock) = with_clock().await;
    let canceled = client.submit("job", &serde_json::json!({})).priority(3).await.expect("submit");
    let requeued = client.submit("job", &serde_json::json!({})).priority(2).await.expect("submit");
    let failed = client.submit("job", &serde_json::json!({})).priority(1).max_attempts(1).await.expect("submit");
    let claim = ClaimParams::new("dead", 1_000).draw(ClaimDraw::new(vec!["default".into()]).limit(3));
    assert_eq!(client.claim(&claim).await.expect("claim").len(), 3);
    client.cancel(&canceled.id).await.expect("cancel");
    clock.advance(1_000);

    // Another queue's claim still recovers every expired lease.
    let other = ClaimParams::new("w2", 1_000).draw(ClaimDraw::new(vec!["elsewhere".into()]).limit(1));
    assert!(client.claim(&other).await.expect("claim").is_empty());

    let read = |id: String| {
        let client = client.clone();
        async move { client.get(&id).await.expect("get").expect("row") }
    };
    let c = read(canceled.id).await;
    assert_eq!((c.status, c.lease_until_ms, c.completed_at_ms), (TaskStatus::Canceled, None, Some(clock.now_ms())));
    let r = read(requeued.id).await;
    assert_eq!((r.status, r.worker_id, r.run_at_ms), (TaskStatus::Queued, None, clock.now_ms()));
    let f = read(failed.id).await;
    assert_eq!((f.status, f.worker_id.as_deref()), (TaskStatus::Failed, Some("dead")));
    assert_eq!(f.error, Some(ErrorEnvelope::lease_expired().to_json()));
    assert_eq!(f.completed_at_ms, Some(clock.now_ms()));
}

#[tokio::test]
async fn heartbeat_batch_returns_owned_leases_in_the_order_asked() {
    let (_fresh, client, _clock) = with_clock().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(client.submit("job", &serde_json::json!({})).await.expect("submit").id);
    }
    let claim = ClaimParams::new("w", 1_000).draw(ClaimDraw::new(vec!["default".into()]).limit(3));
    client.claim(&claim).await.expect("claim");
    client.cancel(&ids[1]).await.expect("cancel");
    let asked = vec![ids[2].clone(), "task_unknown".into(), ids[1].clone(), ids[0].clone()];
    let held = client.heartbeat_batch(&HeartbeatBatchParams::new("w", asked).lease_ms(5_000)).await.expect("heartbeat");
    let got: Vec<_> = held.iter().map(|h| (h.id.clone(), h.cancel_requested())).collect();
    assert_eq!(got, [(ids[2].clone(), false), (ids[1].clone(), true), (ids[0].clone(), false)]);
    let stranger = client.heartbeat_batch(&HeartbeatBatchParams::new("other", ids).lease_ms(5_000)).await.expect("hb");
    assert!(stranger.is_empty());
}

#[tokio::test]
async fn a_worker_write_after_the_lease_ended_is_lost_lease() {
    let (_fresh, client, clock) = with_clock().await;
    let task = client.submit("job", &serde_json::json!({})).await.expect("submit");
    client.claim(&claim_one("w", 1_000)).await.expect("claim");
    clock.advance(1_000);
    let err =
        client.succeed(&SettleParams::new(&task.id, "w").result(serde_json::json!(1))).await.expect_err("expired");
    assert_eq!(err.kind(), ErrorKind::LostLease);
    assert_eq!(client.get(&task.id).await.expect("get").expect("row").status, TaskStatus::Running);
}

#[tokio::test]
async fn purge_cutoff_is_strict() {
    let (_fresh, client, clock) = with_clock().await;
    let task = client.submit("job", &serde_json::json!({})).await.expect("submit");
    client.cancel(&task.id).await.expect("cancel");
    clock.advance(100);
    let filter = PurgeFilter::new().older_than(Duration::from_millis(100));
    assert!(client.purge(&filter).await.expect("purge").is_empty(), "completed exactly at the cutoff stays");
    clock.advance(1);
    assert_eq!(client.purge(&filter).await.expect("purge"), [task.id]);
}

#[tokio::test]
async fn waiting_on_a_task_wakes_on_its_commit_not_at_the_poll() {
    let fresh = fresh_path();
    let store = Arc::new(SqliteStore::open(&fresh.path).await.expect("open"));
    assert!(store.capabilities().push_wakeups);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    let task = client.submit("job", &serde_json::json!({})).await.expect("submit");
    client.claim(&claim_one("w", 60_000)).await.expect("claim");
    let sleeper = {
        let (store, id) = (Arc::clone(&store), task.id.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            cairnq_core::store::wait_for_change(store.as_ref(), &Wake::TaskDone(id), Duration::from_secs(60)).await;
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.succeed(&SettleParams::new(&task.id, "w").result(serde_json::json!(1))).await.expect("succeed");
    let slept = tokio::time::timeout(Duration::from_secs(30), sleeper).await.expect("woken").expect("join");
    assert!(slept < Duration::from_secs(60), "the sleeper ran out its whole timeout");
}

#[tokio::test]
async fn a_corrupt_row_is_a_storage_error_and_integral_reals_decode() {
    let fresh = fresh_path();
    let client = CairnQ::new(SqliteStore::open(&fresh.path).await.expect("open"));
    let good = client.submit("job", &serde_json::json!({})).await.expect("submit");
    let bad = client.submit("job", &serde_json::json!({})).await.expect("submit");
    let conn = rusqlite::Connection::open(&fresh.path).expect("raw");
    conn.execute("update cairnq_tasks set attempt = 2.0, progress = 1 where id = ?1", [&good.id]).expect("reals");
    conn.execute("update cairnq_tasks set priority = 'high' where id = ?1", [&bad.id]).expect("corrupt");

    let read = client.get(&good.id).await.expect("get").expect("row");
    assert_eq!((read.attempt, read.progress), (2, Some(1.0)));
    let err = client.get(&bad.id).await.expect_err("corrupt priority");
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(err.to_string().contains("priority"), "{err}");
}
