//! Rows no ordinary operation would move: a running row without a lease
//! (another writer crashed mid-way, or wrote it so) is repaired into an
//! expired lease, which the next claim's lease recovery takes; `repair`
//! touches only the queues asked for.

use cairnq_core::store::{ClaimDraw, ClaimParams, RepairParams};
use cairnq_core::{Store, TaskStatus};
use cairnq_testkit::support::ByParams;

use crate::common::fresh_path;

fn insert_unleased(path: &std::path::Path, queue: &str) -> String {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let id = cairnq_core::backend::new_task_id();
    conn.execute(
        "insert into cairnq_tasks (id, name, queue, status, payload, attempt, worker_id, run_at_ms, root_id, created_at_ms, updated_at_ms)
         values (?1, 'job', ?2, 'running', '{}', 1, 'worker_gone', 0, ?1, 0, 0)",
        rusqlite::params![id, queue],
    )
    .expect("raw insert");
    id
}

#[tokio::test]
async fn a_running_row_without_a_lease_is_recovered_after_repair() {
    let fresh = fresh_path();
    let store = std::sync::Arc::new(cairnq_sqlite::SqliteStore::open(&fresh.path).await.expect("open"));
    let client = cairnq_core::CairnQ::from_shared(store.clone());
    let stuck = insert_unleased(&fresh.path, "default");
    let elsewhere = insert_unleased(&fresh.path, "other");
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(5));
    assert!(client.claim(&claim).await.expect("claim").is_empty(), "without a lease nothing ever recovers it");

    let repaired = store.repair(&RepairParams::new(vec!["default".into()])).await.expect("repair");
    assert_eq!((repaired.expired, repaired.scheduled), (vec![stuck.clone()], vec![]));
    let claimed = client.claim(&claim).await.expect("claim");
    assert_eq!(claimed.iter().map(|t| (t.id.as_str(), t.attempt)).collect::<Vec<_>>(), [(stuck.as_str(), 2)]);
    let other = client.get(&elsewhere).await.expect("get").expect("row");
    assert_eq!((other.status, other.lease_until_ms), (TaskStatus::Running, None), "another queue is not touched");
    let again = store.repair(&RepairParams::new(vec!["default".into()])).await.expect("repair");
    assert!(again.is_empty(), "a leased row needs no repair");
}
