//! Rows no ordinary operation would move, as a broken writer leaves them: a
//! running row without a lease is repaired into an expired lease (the next
//! claim's lease recovery takes it), a queued row without `run_at_ms` (only
//! possible where a writer dropped the column's NOT NULL) becomes due now.

use cairnq_core::store::{ClaimDraw, ClaimParams, RepairParams};
use cairnq_core::{Store, TaskStatus};

use crate::support::{dsn, fresh_client, raw};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unleased_and_unscheduled_rows_are_repaired_on_the_queues_asked() {
    let (client, store, schema) = fresh_client().await;
    let admin = raw(&dsn()).await;
    let insert = |status: &str, lease: &str, run_at: &str, queue: &str| {
        let id = cairnq_core::backend::new_task_id();
        let sql = format!(
            "insert into {schema}.cairnq_tasks (id, name, queue, status, payload, attempt, worker_id, lease_until_ms,
                 run_at_ms, root_id, created_at_ms, updated_at_ms)
             values ('{id}', 'job', '{queue}', '{status}', '{{}}', 1, 'gone', {lease}, {run_at}, '{id}', 0, 0)"
        );
        (id, sql)
    };
    let (unleased, a) = insert("running", "null", "0", "default");
    let (unscheduled, b) = insert("queued", "null", "null", "default");
    let (elsewhere, c) = insert("running", "null", "0", "other");
    let drop_not_null = format!("alter table {schema}.cairnq_tasks alter column run_at_ms drop not null");
    admin.batch_execute(&format!("{drop_not_null}; {a}; {b}; {c}")).await.expect("odd rows");

    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(5));
    assert!(store.claim(&claim).await.expect("claim").is_empty(), "neither row can move by itself");
    let repaired = store.repair(&RepairParams::new(vec!["default".into()])).await.expect("repair");
    assert_eq!((repaired.expired, repaired.scheduled), (vec![unleased.clone()], vec![unscheduled.clone()]));
    let mut claimed: Vec<String> = store.claim(&claim).await.expect("claim").into_iter().map(|t| t.id).collect();
    claimed.sort();
    let mut expected = vec![unleased, unscheduled];
    expected.sort();
    assert_eq!(claimed, expected, "the expired lease was recovered and both rows claimed");
    let other = client.get(&elsewhere).await.expect("get").expect("row");
    assert_eq!((other.status, other.lease_until_ms), (TaskStatus::Running, None), "another queue is not touched");
}
