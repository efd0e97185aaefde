//! Two stores on one file in one process share one writer: no contention
//! for SQLite's write lock, one group commit, wakeups that reach both, and
//! each store closing on its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Clock, ErrorKind, Store, Wake};
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use cairnq_testkit::support::ByParams;

use crate::common::{count, fresh_path};

fn claim(worker: &str, limit: u32) -> ClaimParams {
    ClaimParams::new(worker, 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(limit))
}

/// A clock that never moves, to tell whose clock a write used.
#[derive(Debug)]
struct Stopped(i64);

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        self.0
    }
}

/// Whether no connection has the file open: only then may one switch it
/// out of WAL mode (the next open switches it back).
fn nobody_has_it_open(path: &std::path::Path) -> bool {
    let conn = rusqlite::Connection::open(path).expect("raw connection");
    conn.busy_timeout(Duration::ZERO).expect("no busy wait");
    conn.pragma_update_and_check(None, "journal_mode", "delete", |row| row.get::<_, String>(0))
        .is_ok_and(|mode| mode == "delete")
}

/// Waits for `watch` and says how long that took; `None` past `timeout`.
async fn woken_within(watch: cairnq_core::ChangeWatch, timeout: Duration) -> Option<Duration> {
    let start = Instant::now();
    tokio::time::timeout(timeout, watch).await.ok().map(|()| start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_share_one_writer_and_never_meet_a_busy_lock() {
    let fresh = fresh_path();
    // No busy waiting at all: two writers on the file would fail at once
    // whenever they met.
    let options = SqliteOptions::new().busy_timeout(Duration::ZERO);
    let other_spelling = fresh.dir.path().join(".").join("queue.db");
    let (first, second) = tokio::join!(
        SqliteStore::open_with(&fresh.path, options.clone()),
        SqliteStore::open_with(&other_spelling, options),
    );
    let stores = [Arc::new(first.expect("open")), Arc::new(second.expect("open the same new file together"))];
    let (lanes, per_lane) = (8, 40);
    let writers: Vec<tokio::task::JoinHandle<cairnq_core::Result<()>>> = (0..lanes)
        .map(|lane| {
            let store = Arc::clone(&stores[lane % 2]);
            tokio::spawn(async move {
                let client = CairnQ::from_shared(store as Arc<dyn Store>);
                let worker = format!("w{lane}");
                for n in 0..per_lane {
                    client.submit("job", &serde_json::json!({ "lane": lane, "n": n })).await?;
                    for task in client.claim(&claim(&worker, 1)).await? {
                        client.complete(&SettleParams::new(&task.id, &worker)).await?;
                    }
                }
                Ok(())
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer task").expect("every write succeeded: no SQLITE_BUSY");
    }
    let (a, b) = (stores[0].write_stats(), stores[1].write_stats());
    assert_eq!(a, b, "both stores report the one writer");
    let submits = (lanes * per_lane) as u64;
    assert!(a.jobs >= 2 * submits, "one writer ran the writes of both stores: {a:?}");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), submits as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_one_store_leaves_the_other_working_and_the_last_close_ends_the_threads() {
    let fresh = fresh_path();
    let first = SqliteStore::open(&fresh.path).await.expect("open");
    let second = Arc::new(SqliteStore::open(&fresh.path).await.expect("open again"));
    let early = CairnQ::new(first);
    early.submit("job", &serde_json::json!({})).await.expect("submit");

    early.close().await.expect("close the first store");
    let refused = early.submit("job", &serde_json::json!({})).await.expect_err("the closed store refuses");
    assert_eq!(refused.kind(), ErrorKind::StoreClosed, "{refused}");
    assert!(!nobody_has_it_open(&fresh.path), "the connections stayed open for the second store");

    let late = CairnQ::from_shared(Arc::clone(&second) as Arc<dyn Store>);
    let task = late.submit("job", &serde_json::json!({})).await.expect("the second store still writes");
    assert!(late.get(&task.id).await.expect("and reads").is_some());
    let claimed = late.claim(&claim("w", 10)).await.expect("and claims");
    assert_eq!(claimed.len(), 2, "both tasks, whichever store wrote them");
    assert_eq!(second.write_stats().jobs, 3, "one writer served both stores");

    late.close().await.expect("close the last store");
    // The writer's connection closes last and alone, so SQLite removes
    // the WAL: a clean close leaves no `-wal` behind.
    assert!(!fresh.dir.path().join("queue.db-wal").exists(), "the last close left the -wal file");
    assert!(nobody_has_it_open(&fresh.path), "the last close waited until every connection was closed");
    let reopened = SqliteStore::open(&fresh.path).await.expect("reopen");
    assert_eq!(reopened.write_stats().jobs, 0, "a new writer once the last store closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_through_one_store_wakes_a_sleeper_on_the_other_without_the_watcher() {
    let fresh = fresh_path();
    // No cross-process watcher: only the in-process path can wake them.
    let options = SqliteOptions::new().watch_interval(None);
    let writing = SqliteStore::open_with(&fresh.path, options.clone()).await.expect("open");
    let sleeping = SqliteStore::open_with(&fresh.path, options).await.expect("open again");
    let timeout = Duration::from_secs(5);

    let queued = sleeping.notifications().watch(&Wake::Queued(vec!["default".into()]));
    let (woken, task) = tokio::join!(woken_within(queued, timeout), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        CairnQ::new(writing).submit("job", &serde_json::json!({})).await.expect("submit")
    });
    assert!(woken.is_some(), "a submit through the other store did not wake the queue's sleeper");

    let claimed = sleeping.claim(&claim("w", 1)).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    let writing = SqliteStore::open_with(&fresh.path, SqliteOptions::new()).await.expect("a third store");
    let done = sleeping.notifications().watch(&Wake::TaskDone(task.id.clone()));
    let (woken, settled) = tokio::join!(woken_within(done, timeout), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        writing.complete(&SettleParams::new(&task.id, "w")).await
    });
    settled.expect("complete");
    assert!(woken.is_some(), "a completion through another store did not wake the task's waiter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_openers_options_hold_until_the_last_store_closes() {
    let fresh = fresh_path();
    let stopped = SqliteOptions::new().clock(Arc::new(Stopped(1_000_000)));
    let first = SqliteStore::open_with(&fresh.path, stopped).await.expect("open with a stopped clock");
    let second = CairnQ::new(SqliteStore::open(&fresh.path).await.expect("open with the system clock"));
    let task = second.submit("job", &serde_json::json!({})).await.expect("submit");
    assert_eq!(task.created_at_ms, 1_000_000, "the write used the first opener's clock");
    let read = second.get(&task.id).await.expect("get").expect("exists");
    assert_eq!(read.created_at_ms, 1_000_000);

    first.close().await.expect("close");
    let later = second.submit("job", &serde_json::json!({})).await.expect("submit");
    assert_eq!(later.created_at_ms, 1_000_000, "still the first opener's options while any store is open");
    second.close().await.expect("close");
    let third = CairnQ::new(SqliteStore::open(&fresh.path).await.expect("open anew"));
    let fresh_task = third.submit("job", &serde_json::json!({})).await.expect("submit");
    assert!(fresh_task.created_at_ms > 1_000_000, "a new opener's options once the others closed");
}
