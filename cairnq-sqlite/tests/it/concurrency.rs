//! Contention: group commit in one store, and another process holding the
//! write lock (keyed producers on several stores of one file are in the
//! shared suite).

use std::sync::Arc;

use cairnq_core::{CairnQ, Store, SubmitOptions};

use crate::common::{count, fresh_path, open_store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_writers_share_commits() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    let writers: Vec<_> = (0..64)
        .map(|w| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..20 {
                    client.submit("gc", &serde_json::json!({ "w": w, "n": n })).await.expect("submit");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.expect("writer");
    }
    let stats = store.write_stats();
    let writes = 64 * 20;
    // Plain submits waiting together share one insert (a job), and jobs
    // waiting together share one commit.
    assert!(stats.jobs < writes / 2, "plain submits did not share inserts: {stats:?}");
    assert!(stats.commits <= stats.jobs, "{stats:?}");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), writes as i64);
    let distinct = count(
        &fresh.path,
        "select count(distinct json_extract(payload, '$.w') || ':' || json_extract(payload, '$.n')) from cairnq_tasks",
    );
    assert_eq!(distinct, writes as i64, "every submit wrote its own task");
}

/// Plain submits that wait while the writer is busy go to it as one
/// insert; when that insert is refused (here: one task's id is taken), the
/// batch is written again a task at a time, so only that submit fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_shared_insert_fails_only_its_bad_submit() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    let taken = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>)
        .submit("seed", &serde_json::json!({}))
        .await
        .expect("seed");
    let other = hold_write_lock(&fresh.path);
    let submit = |n: u32| {
        let (store, taken) = (Arc::clone(&store), taken.id.clone());
        tokio::spawn(async move {
            let payload = cairnq_core::Json::encode(&serde_json::json!({ "n": n })).expect("payload");
            let mut task = SubmitOptions::new().to_new_task("shared", payload).expect("a task");
            if n == 7 {
                task.id = taken;
            }
            store.submit(&task).await
        })
    };
    // The first waits at the writer for the lock; the rest wait behind it
    // in the queue of plain submits, and go out together.
    let first = submit(0);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let rest: Vec<_> = (1..32).map(submit).collect();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    other.execute_batch("commit").expect("release the lock");
    first.await.expect("join").expect("the first submit");
    let mut failed = Vec::new();
    for (n, s) in (1..32).zip(rest) {
        if s.await.expect("join").is_err() {
            failed.push(n);
        }
    }
    assert_eq!(failed, vec![7], "only the submit whose id was taken fails");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks where name = 'shared'"), 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_group_commit_fails_only_its_caller() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    client.submit("seed", &serde_json::json!({})).key("taken").await.expect("seed");
    let submits: Vec<_> = (0..32)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                let options =
                    SubmitOptions::new().key(if n % 2 == 0 { "taken".to_string() } else { format!("free-{n}") });
                let options = options.conflict(cairnq_core::Conflict::Reject);
                client.submit("gc", &serde_json::json!({ "n": n })).options(options).await
            })
        })
        .collect();
    let mut rejected = 0;
    for s in submits {
        match s.await.expect("join") {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.kind(), cairnq_core::ErrorKind::AlreadyExists, "{e}");
                rejected += 1;
            }
        }
    }
    assert_eq!(rejected, 16);
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), 17, "every other write committed");
}

/// A submit_many whose second item is rejected after its first was
/// inserted: the writer must undo exactly that job (rolling back and
/// re-running its batch with savepoints) and still commit its neighbours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_failing_after_it_wrote_is_undone_alone_in_a_group_commit() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    client.submit("seed", &serde_json::json!({})).key("taken").await.expect("seed");
    let writes: Vec<_> = (0..48)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                if n % 3 == 0 {
                    let reject = SubmitOptions::new().key("taken").conflict(cairnq_core::Conflict::Reject);
                    let specs = [
                        cairnq_core::TaskSpec::new("doomed", &serde_json::json!({ "n": n })),
                        cairnq_core::TaskSpec::new("doomed", &serde_json::json!({ "n": n })).options(reject),
                    ];
                    client.submit_many(&specs).await.map(|_| ())
                } else {
                    client.submit("kept", &serde_json::json!({ "n": n })).await.map(|_| ())
                }
            })
        })
        .collect();
    let mut rejected = 0;
    for w in writes {
        if let Err(e) = w.await.expect("join") {
            assert_eq!(e.kind(), cairnq_core::ErrorKind::AlreadyExists, "{e}");
            rejected += 1;
        }
    }
    assert_eq!(rejected, 16);
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks where name = 'doomed'"), 0, "undone");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks where name = 'kept'"), 32);
    let stats = store.write_stats();
    assert!(stats.commits < stats.jobs, "the writes never shared a commit: {stats:?}");
}

/// Another process holding SQLite's write lock (a raw connection here).
fn hold_write_lock(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("raw connection");
    conn.execute_batch("begin immediate").expect("take the write lock");
    conn
}

/// ... and the writer counts the wait (the busy wait of processes sharing
/// one file, `WriteStats::lock_wait`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_carry_on_while_a_write_waits_for_another_process_lock() {
    let fresh = fresh_path();
    let store = Arc::new(open_store(&fresh.path).await);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    let existing = client.submit("seed", &serde_json::json!({})).await.expect("seed");
    let before = store.write_stats();
    assert_eq!((before.lock_waits, before.lock_tries), (0, 0), "nobody held the lock yet: {before:?}");
    let other = hold_write_lock(&fresh.path);

    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.submit("waits", &serde_json::json!({})).await })
    };
    // Give the write time to reach the writer thread and wait on the lock.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let read = client.get(&existing.id).await.expect("read while the write waits");
    assert_eq!(read.map(|t| t.id), Some(existing.id));
    assert!(!pending.is_finished(), "the write cannot commit while another process holds the lock");

    other.execute_batch("commit").expect("release the lock");
    pending.await.expect("join").expect("the write commits once the lock is free");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), 2);
    let after = store.write_stats();
    assert_eq!(after.lock_waits, 1, "one transaction waited for the lock: {after:?}");
    assert!(after.lock_tries >= 1 && !after.lock_wait.is_zero(), "the wait is counted: {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_the_busy_timeout_fails_transient_and_writes_nothing() {
    let fresh = fresh_path();
    let options = cairnq_sqlite::SqliteOptions::new().busy_timeout(std::time::Duration::from_millis(200));
    let client = CairnQ::new(cairnq_sqlite::SqliteStore::open_with(&fresh.path, options).await.expect("open"));
    let other = hold_write_lock(&fresh.path);

    let err = client.submit("blocked", &serde_json::json!({})).await.expect_err("the lock is never released");

    assert_eq!(err.kind(), cairnq_core::ErrorKind::StorageError, "{err}");
    assert!(err.is_transient(), "lock contention is transient: {err}");
    other.execute_batch("rollback").expect("release");
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), 0);
    client.submit("later", &serde_json::json!({})).await.expect("the store still works");
}
