//! Task dependencies under concurrent settles: the migration's trigger
//! must release a task whose dependencies end in several transactions at
//! once (read committed would let each miss the other's edge), and never
//! deadlock batch settles that share dependents.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_testkit::support::eventually_within;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::json;

use crate::support::{count, dsn, fresh, raw};

const LEAVES: usize = 240;
const JOINS: usize = 120;
const PER_JOIN: usize = 4;

/// Four workers, each on its own store (its own pool), settle 240 leaves
/// in coalesced batches while they are submitted; 120 joins wait for four leaves each, the sets
/// overlapping. Every join is released exactly once: it runs once (on its
/// first attempt), after all four of its leaves succeeded, and no edge or
/// wait is left unresolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_settles_release_every_dependent_exactly_once() {
    let (store, schema) = fresh().await;
    let client = CairnQ::new(store);
    let runs: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..4 {
        let store = cairnq_testkit::postgres::open(&dsn(), &schema).await.expect("connect a worker");
        let options = WorkerOptions::new()
            .concurrency(8)
            .poll_interval(Duration::from_millis(20))
            .worker_id(format!("worker_{w}"));
        let mut worker = Worker::new(CairnQ::new(store), options).expect("worker options");
        worker
            .task("leaf", |_ctx: TaskContext, _: serde_json::Value| async move { Ok::<_, TaskError>(1) })
            .expect("leaf");
        let runs = runs.clone();
        worker
            .task("join", move |ctx: TaskContext, _: serde_json::Value| {
                let runs = runs.clone();
                async move {
                    *runs.lock().expect("runs").entry(ctx.task_id().to_string()).or_default() += 1;
                    let deps = ctx.dependencies().await?;
                    let all_done = deps.len() == PER_JOIN && deps.iter().all(|t| t.status == TaskStatus::Succeeded);
                    Ok::<_, TaskError>(json!({"all_done": all_done, "attempt": ctx.attempt()}))
                }
            })
            .expect("join");
        workers.push(worker.spawn());
    }

    // Submitted while the workers settle: a join's dependencies may be ending
    // as it is submitted.
    let mut leaves = Vec::with_capacity(LEAVES);
    for i in 0..LEAVES {
        leaves.push(client.submit("leaf", &json!({"i": i})).await.expect("submit a leaf").id);
    }
    let mut joins = Vec::with_capacity(JOINS);
    for j in 0..JOINS {
        // Spread over the leaves so joins share leaves and batches share joins.
        let deps: Vec<&String> = (0..PER_JOIN).map(|k| &leaves[(j * 7 + k * 61) % LEAVES]).collect();
        joins.push(client.submit("join", &json!({"j": j})).after(deps).await.expect("submit a join").id);
    }

    let db = raw(&dsn()).await;
    let succeeded = format!("select count(*) from \"{schema}\".cairnq_tasks where status = 'succeeded'");
    let total = i64::try_from(LEAVES + JOINS).expect("small");
    eventually_within("every leaf and join succeeds", Duration::from_secs(240), || async {
        count(&db, &succeeded).await == total
    })
    .await;
    for worker in workers {
        worker.stop_and_join().await.expect("stop");
    }

    let runs = runs.lock().expect("runs").clone();
    for id in &joins {
        assert_eq!(runs.get(id), Some(&1), "join {id} ran exactly once");
        let task = client.get(id).await.expect("get").expect("the join");
        assert_eq!(task.attempt, 1, "released once, claimed once");
        assert_eq!(task.result.expect("a result").to_value().expect("JSON")["all_done"], json!(true));
    }
    let unresolved = format!("select count(*) from \"{schema}\".cairnq_ext_task_deps where outcome is null");
    assert_eq!(count(&db, &unresolved).await, 0, "every edge resolved once");
    let waiting = format!("select count(*) from \"{schema}\".cairnq_ext_task_waits where remaining <> 0");
    assert_eq!(count(&db, &waiting).await, 0, "every count reached zero, none below");
}

/// The edges carry no foreign keys (extension 11): a delete of task rows,
/// by any SDK's purge or by hand, removes the edges at either end of what
/// it deletes, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_task_removes_its_edges_at_either_end() {
    let (store, schema) = fresh().await;
    let client = CairnQ::new(store);
    let a = client.submit("a", &json!({})).await.expect("submit a").id;
    let b = client.submit("b", &json!({})).await.expect("submit b").id;
    let w = client.submit("w", &json!({})).after([&a, &b]).await.expect("submit w").id;
    let v = client.submit("v", &json!({})).after([&b]).await.expect("submit v").id;

    let db = raw(&dsn()).await;
    let edges = format!("select count(*) from \"{schema}\".cairnq_ext_task_deps");
    let edges_of = |id: &str| {
        format!(
            "select count(*) from \"{schema}\".cairnq_ext_task_deps where task_id = '{id}' or depends_on_id = '{id}'"
        )
    };
    assert_eq!(count(&db, &edges).await, 3, "w after a and b, v after b");

    let delete = format!("delete from \"{schema}\".cairnq_tasks where id = $1");
    db.execute(delete.as_str(), &[&a]).await.expect("delete a dependency");
    assert_eq!(count(&db, &edges_of(&a)).await, 0, "the dependency's edge went with it");
    assert_eq!(count(&db, &edges).await, 2, "no other edge went");

    db.execute(delete.as_str(), &[&w]).await.expect("delete a waiting task");
    assert_eq!(count(&db, &edges_of(&w)).await, 0, "the waiting task's edges went with it");
    assert_eq!(count(&db, &edges_of(&v)).await, 1, "v still waits for b");
}
