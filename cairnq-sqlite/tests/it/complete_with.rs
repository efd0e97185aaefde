//! `SqliteStore::complete_with`: the application's writes and the settle
//! in one transaction on the writer thread, rolled back alone when the
//! lease is lost, even inside a group commit of other writes.

use std::path::Path;
use std::sync::Arc;

use cairnq_core::store::{ClaimDraw, ClaimParams};
use cairnq_core::{CairnQ, ErrorKind, Task, TaskStatus};
use cairnq_testkit::support::ByParams;
use rusqlite::Connection;
use serde_json::json;

use cairnq_sqlite::SqliteStore;

use crate::common::{Fresh, count, fresh_path, open_store};

/// The application's own table, in the queue's file.
fn app_table(path: &Path) {
    let conn = Connection::open(path).expect("app connection");
    conn.execute("create table invoices (task_id text primary key, cents integer not null)", []).expect("app table");
}

async fn claimed(client: &CairnQ, worker_id: &str, tasks: u32) -> Vec<Task> {
    let draw = ClaimDraw::new(vec!["default".into()]).limit(tasks);
    client.claim(&ClaimParams::new(worker_id, 30_000).draw(draw)).await.expect("claim")
}

/// A file with the application's table and one task, claimed by `w1`: the
/// file, a store for `complete_with`, a client on another store of the
/// same file, and the task.
async fn one_claimed_task() -> (Fresh, SqliteStore, CairnQ, Task) {
    let fresh = fresh_path();
    let store = open_store(&fresh.path).await;
    app_table(&fresh.path);
    let client = CairnQ::new(open_store(&fresh.path).await);
    let task = client.submit("bill", &json!({})).await.expect("submit");
    claimed(&client, "w1", 1).await;
    (fresh, store, client, task)
}

fn invoice(task_id: String) -> impl FnOnce(&Connection) -> rusqlite::Result<serde_json::Value> + Send + 'static {
    move |conn| {
        conn.execute("insert into invoices values (?1, 250)", [&task_id])?;
        Ok(json!({"invoiced": task_id}))
    }
}

#[tokio::test]
async fn the_applications_rows_and_the_result_commit_together() {
    let (fresh, store, client, task) = one_claimed_task().await;

    let done = store.complete_with(&task.id, "w1", invoice(task.id.clone())).await.expect("complete_with");
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"invoiced": task.id}).into()));
    assert_eq!(count(&fresh.path, "select count(*) from invoices"), 1, "the application's row committed");
    let read = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(read.status, TaskStatus::Succeeded, "the settle committed");
}

#[tokio::test]
async fn a_lost_lease_rolls_the_applications_rows_back() {
    let (fresh, store, client, task) = one_claimed_task().await;

    let err = store.complete_with(&task.id, "w2", invoice(task.id.clone())).await.expect_err("not w2's lease");
    assert_eq!(err.kind(), ErrorKind::LostLease, "{err}");
    assert_eq!(count(&fresh.path, "select count(*) from invoices"), 0, "the row went with the settle");
    let read = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!((read.status, read.worker_id.as_deref()), (TaskStatus::Running, Some("w1")));
}

#[tokio::test]
async fn a_failing_closure_settles_nothing() {
    let (fresh, store, client, task) = one_claimed_task().await;

    let err = store
        .complete_with(&task.id, "w1", |conn| {
            conn.execute("insert into invoices values ('first', 1)", [])?;
            conn.execute("insert into no_such_table values (1)", [])?;
            Ok(json!(null))
        })
        .await
        .expect_err("the closure failed");
    assert!(err.to_string().contains("no_such_table"), "{err}");
    assert_eq!(count(&fresh.path, "select count(*) from invoices"), 0, "the closure's first insert rolled back");
    let read = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(read.status, TaskStatus::Running, "nothing settled");
    let panicked = store
        .complete_with(&task.id, "w1", |conn| -> rusqlite::Result<()> {
            conn.execute("insert into invoices values ('before the panic', 1)", [])?;
            panic!("handler bug")
        })
        .await
        .expect_err("a panic in the closure is this caller's error");
    let panic = cairnq_sqlite::ClosurePanicked::of(&panicked).expect("named as the closure's panic");
    assert_eq!(panic.message(), "handler bug");
    assert!(panicked.to_string().contains("the application's closure (complete_with) panicked"), "{panicked}");
    assert_eq!(count(&fresh.path, "select count(*) from invoices"), 0, "its insert rolled back");
    store.complete_with(&task.id, "w1", invoice(task.id.clone())).await.expect("the writer survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_commit_only_the_lost_closures_roll_back() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    app_table(&fresh.path);
    let client = CairnQ::new(open_store(&fresh.path).await);
    for _ in 0..41 {
        client.submit("bill", &json!({})).await.expect("submit");
    }
    let mut tasks = claimed(&client, "w1", 41).await;
    assert_eq!(tasks.len(), 41);
    let before = store.write_stats();

    // A slow closure holds the writer while the others queue up behind
    // it, so they share transactions. Every other one of them claims to
    // be another worker's.
    let blocker = tasks.pop().expect("a task");
    let slow = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let work = |_: &Connection| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                Ok(())
            };
            store.complete_with(&blocker.id, "w1", work).await.expect("the slow settle")
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let settles = tasks.iter().enumerate().map(|(i, task)| {
        let (store, id) = (Arc::clone(&store), task.id.clone());
        let worker = if i % 2 == 0 { "w1" } else { "w2" };
        tokio::spawn(async move { store.complete_with(&id, worker, invoice(id.clone())).await.map(|t| t.id) })
    });
    let outcomes = futures::future::join_all(settles).await;
    slow.await.expect("join");
    let after = store.write_stats();

    let mut committed = Vec::new();
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome.expect("join") {
            Ok(id) => committed.push(id),
            Err(err) => assert!(i % 2 == 1 && err.kind() == ErrorKind::LostLease, "settle {i}: {err}"),
        }
    }
    assert_eq!(committed.len(), 20, "every owned settle committed");
    let conn = crate::common::raw(&fresh.path);
    let mut rows: Vec<String> = conn
        .prepare("select task_id from invoices order by task_id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("invoices");
    committed.sort();
    rows.sort();
    assert_eq!(rows, committed, "exactly the owned settles' rows are in the file");
    assert_eq!(after.jobs - before.jobs, 41, "one job per settle");
    assert!(after.commits - before.commits <= 4, "the settles shared transactions: {before:?} -> {after:?}");
}
