//! Cross-process push wakeups: a commit made by another process ends a
//! sleep in `wait_for_change` long before its timeout.

use std::time::{Duration, Instant};

use cairnq_core::{Store, Wake};
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use cairnq_testkit::child::{ChildMode, ChildProcess};

use crate::common::{child_args, count, fresh_path};

/// Far longer than the child takes to start or to submit.
const CHILD_PATIENCE: Duration = Duration::from_secs(60);

/// Sleeps until the store holds a task or `timeout` passes; returns how
/// long that took. Any wake before the child's commit (the child's open
/// may write planner statistics) just sleeps again.
async fn sleep_until_a_task(store: &SqliteStore, path: &std::path::Path, timeout: Duration) -> Duration {
    let start = Instant::now();
    let wake = Wake::Queued(vec!["default".into()]);
    while count(path, "select count(*) from cairnq_tasks") == 0 && start.elapsed() < timeout {
        cairnq_core::store::wait_for_change(store, &wake, timeout.saturating_sub(start.elapsed())).await;
    }
    start.elapsed()
}

/// Starts a child that submits once told to; the sleeper runs meanwhile.
/// Returns the sleep's duration and whether the task was there after it.
async fn sleep_through_a_foreign_submit(options: SqliteOptions, timeout: Duration) -> (Duration, i64) {
    let fresh = fresh_path();
    let store = SqliteStore::open_with(&fresh.path, options).await.expect("open store");
    let mut child =
        ChildProcess::spawn(&child_args(&fresh.path, ChildMode::SubmitOnGo)).expect("start the child process");
    child.line_starting("opened", CHILD_PATIENCE).await.expect("the child opens the store");
    let sleeper = sleep_until_a_task(&store, &fresh.path, timeout);
    let go = async {
        // Let the sleeper subscribe first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        child.send_line("go").expect("tell the child to submit");
    };
    let (slept, ()) = tokio::join!(sleeper, go);
    let tasks = count(&fresh.path, "select count(*) from cairnq_tasks");
    child.line_starting("ack ", CHILD_PATIENCE).await.expect("the child acknowledges its submit");
    child.close_stdin();
    let status = child.wait(CHILD_PATIENCE).await.expect("the child ends once its stdin closes");
    assert!(status.success(), "the child failed: {:?}", child.rest().await);
    (slept, tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_commit_wakes_a_sleeper_long_before_its_timeout() {
    let timeout = Duration::from_secs(10);
    let (slept, tasks) = sleep_through_a_foreign_submit(SqliteOptions::new(), timeout).await;
    assert_eq!(tasks, 1, "the sleeper returned only after the child's commit");
    assert!(slept < timeout / 2, "the sleeper waited out its timeout ({slept:?}) instead of waking on the commit");
}

/// The control: with the watcher off, the same foreign commit goes
/// unnoticed until the timeout (so the test above can fail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_watcher_a_foreign_commit_is_seen_only_at_the_timeout() {
    let timeout = Duration::from_millis(1_500);
    let (slept, tasks) = sleep_through_a_foreign_submit(SqliteOptions::new().watch_interval(None), timeout).await;
    assert_eq!(tasks, 1, "the child committed");
    assert!(slept >= timeout, "woke after {slept:?} without a watcher");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reports_push_wakeups_and_closes_with_a_parked_watcher() {
    let fresh = fresh_path();
    let store = SqliteStore::open(&fresh.path).await.expect("open store");
    assert!(store.capabilities().push_wakeups);
    cairnq_core::store::wait_for_change(&store, &Wake::TaskDone("nope".into()), Duration::from_millis(20)).await;
    tokio::time::timeout(Duration::from_secs(30), store.close()).await.expect("close ends the watcher").expect("close");
}
