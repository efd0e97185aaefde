//! Databases in memory: `:memory:` (a database per open), shared-cache
//! URIs (one database for every open of a name in this process), and the
//! paths that are refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams, GetParams, SettleParams, TaskSelector};
use cairnq_core::{CairnQ, ErrorKind, Store, TaskStatus, WaitOptions, Wake};
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::support::ByParams;

use crate::common::fresh_path;

fn claim_one(worker: &str) -> ClaimParams {
    ClaimParams::new(worker, 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1))
}

/// A shared-cache name no other test uses.
fn unique_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("cairnq-it-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn exists(store: &SqliteStore, id: &str) -> bool {
    store.get(&GetParams::new(TaskSelector::Id(id.into()))).await.expect("get").is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_store_submits_claims_completes_and_wakes_a_waiter_by_push() {
    let store = Arc::new(SqliteStore::open(":memory:").await.expect("open :memory:"));
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    let task = client.submit("resize", &serde_json::json!({"w": 640})).await.expect("submit");
    let read = client.get(&task.id).await.expect("a read sees the write").expect("the task exists");
    assert_eq!(read.status, TaskStatus::Queued);
    let claimed = client.claim(&claim_one("w")).await.expect("claim");
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [task.id.as_str()]);

    // Subscribed before the commit, as waiters do; the completion must end
    // the sleep at once, not at a poll or the timeout.
    let woken = store.notifications().watch(&Wake::TaskDone(task.id.clone()));
    let settler = {
        let (client, id) = (client.clone(), task.id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            client.complete(&SettleParams::new(&id, "w").result(serde_json::json!({"bytes": 7}))).await
        })
    };
    let start = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), woken).await.expect("the completion woke the waiter");
    assert!(start.elapsed() < Duration::from_secs(5), "woken late: {:?}", start.elapsed());
    settler.await.expect("settler").expect("complete");
    let done = client.wait(&task.id, &WaitOptions::default()).await.expect("wait");
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result.map(|r| r.to_value().expect("json")), Some(serde_json::json!({"bytes": 7})));
    assert!(!std::path::Path::new(":memory:").exists(), "no file was created for the database");

    client.close().await.expect("close");
    let closed = store.get(&GetParams::new(TaskSelector::Id(task.id.clone()))).await.expect_err("closed");
    assert_eq!(closed.kind(), ErrorKind::StoreClosed, "{closed}");
}

#[tokio::test]
async fn every_open_of_memory_is_a_database_of_its_own() {
    let first = SqliteStore::open(":memory:").await.expect("open");
    let second = SqliteStore::open(":memory:").await.expect("open");
    let task = CairnQ::new(first).submit("job", &serde_json::json!({})).await.expect("submit");
    assert!(!exists(&second, &task.id).await, "the second database saw the first one's task");
    assert_eq!(second.write_stats().jobs, 0, "the second store has a writer of its own");
    let stats = CairnQ::new(second).stats(None).await.expect("stats");
    assert!(stats.is_empty(), "{stats:?}");
}

#[tokio::test]
async fn in_memory_opens_a_private_database_that_ends_with_its_store() {
    let store = SqliteStore::in_memory().await.expect("in_memory");
    assert_eq!(store.path(), std::path::Path::new(":memory:"));
    let client = CairnQ::new(store);
    let submits = (0..32).map(|n| {
        let client = client.clone();
        async move { client.submit("job", &serde_json::json!({ "n": n })).await }
    });
    let tasks = futures::future::try_join_all(submits).await.expect("concurrent submits");
    let page = client.list(&cairnq_core::ListFilter::new()).await.expect("list");
    assert_eq!(page.tasks.len(), tasks.len());
    client.close().await.expect("close");
    let again = CairnQ::new(SqliteStore::in_memory().await.expect("in_memory"));
    assert!(again.get(&tasks[0].id).await.expect("get").is_none(), "a new database starts empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opens_of_one_shared_cache_name_share_one_database_and_one_writer() {
    let name = unique_name();
    let first = SqliteStore::open(format!("file:{name}?mode=memory&cache=shared")).await.expect("open");
    // The same name spelled another way (parameters swapped).
    let second = SqliteStore::open(format!("file:{name}?cache=shared&mode=memory")).await.expect("open again");
    let other = SqliteStore::open(format!("file:{}?mode=memory&cache=shared", unique_name())).await.expect("open");

    let submitted = CairnQ::new(SqliteStore::open(first.path()).await.expect("third open"));
    let task = submitted.submit("job", &serde_json::json!({})).await.expect("submit");
    assert!(exists(&first, &task.id).await && exists(&second, &task.id).await, "one database");
    assert!(!exists(&other, &task.id).await, "another name is another database");
    assert_eq!(first.write_stats().jobs, 1, "one writer served the write");
    assert_eq!(second.write_stats(), first.write_stats());
    assert_eq!(other.write_stats().jobs, 0);

    // Closing some stores leaves the database to the rest.
    submitted.close().await.expect("close");
    first.close().await.expect("close");
    let claimed = second.claim(&claim_one("w")).await.expect("the remaining store still writes");
    assert_eq!(claimed.len(), 1);
    second.close().await.expect("close the last store");
    let reopened = SqliteStore::open(format!("file:{name}?mode=memory&cache=shared")).await.expect("reopen");
    assert!(!exists(&reopened, &task.id).await, "the database ended with the last store on it");
}

#[tokio::test]
async fn an_empty_path_and_file_uris_naming_files_are_refused_creating_nothing() {
    let fresh = fresh_path();
    let file_uri = format!("file:{}", fresh.path.display());
    let with_mode = format!("{file_uri}?mode=rwc");
    for bad in ["", file_uri.as_str(), with_mode.as_str()] {
        let error = SqliteStore::open(bad).await.expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::ValidationError, "{bad:?}: {error}");
        assert!(error.to_string().contains("path"), "{bad:?}: {error}");
    }
    let left: Vec<_> = std::fs::read_dir(fresh.dir.path()).expect("list").collect();
    assert!(left.is_empty(), "something was created: {left:?}");
}
