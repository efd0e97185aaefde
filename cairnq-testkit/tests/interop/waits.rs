//! Waits by key across languages, on SQLite and Postgres: a Python process
//! waiting on a key whose task a Rust process replaces ends with the new
//! task, and the reverse. Both SDKs re-resolve the key on every poll.
//!
//! Nothing is left to timing: each side's wait reports every change in what
//! the key resolves to (the peer prints `{"resolved": id}` lines, our side
//! wraps the store), and the other side acts only once the waiter has been
//! seen waiting on a key with no task, then holding the first task. A wait
//! that stuck to the first task would end with it, canceled by the replace,
//! and fail the test.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::store::{ClaimDraw, GetParams, Store};
use cairnq_core::{CairnQ, Conflict, Result, SubmitOptions, TaskRef, TaskSelector, TaskStatus, WaitOptions};
use cairnq_testkit::forwarding::{Forward, Forwarding};
use cairnq_testkit::support::session;
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::{peer, spawn_peer};

/// One database as both sides name it: our client, and the peer's argument.
struct Shared {
    client: CairnQ,
    /// The store under `client`, for wrapping.
    store: Arc<dyn Store>,
    peer_db: String,
    /// Keeps a SQLite file's directory for the test's length.
    _dir: Option<tempfile::TempDir>,
}

async fn on_sqlite() -> Shared {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("waits.db");
    let store: Arc<dyn Store> = Arc::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("open"));
    Shared {
        client: CairnQ::from_shared(store.clone()),
        store,
        peer_db: path.to_str().expect("utf-8 path").to_string(),
        _dir: Some(dir),
    }
}

#[cfg(feature = "postgres")]
async fn on_postgres() -> Shared {
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let store: Arc<dyn Store> = Arc::new(cairnq_testkit::postgres::open(&dsn, &schema).await.expect("connect"));
    Shared {
        client: CairnQ::from_shared(store.clone()),
        store,
        peer_db: crate::postgres::with_schema(&dsn, &schema),
        _dir: None,
    }
}

/// Forwards everything, and sends each change in what a by-key status read
/// resolves to (`None`: no task under the key).
struct Resolutions {
    inner: Arc<dyn Store>,
    seen: mpsc::UnboundedSender<Option<String>>,
    last: parking_lot::Mutex<Option<Option<String>>>,
}

#[async_trait]
impl Forward for Resolutions {
    fn inner(&self) -> &dyn Store {
        self.inner.as_ref()
    }

    async fn get_status(&self, params: &GetParams) -> Result<Option<TaskRef>> {
        let status = self.inner.get_status(params).await?;
        if matches!(params.task, TaskSelector::Key(_)) {
            let resolved = status.as_ref().map(|s| s.id.clone());
            let mut last = self.last.lock();
            if last.as_ref() != Some(&resolved) {
                *last = Some(resolved.clone());
                let _ = self.seen.send(resolved);
            }
        }
        Ok(status)
    }
}

async fn next_resolution(seen: &mut mpsc::UnboundedReceiver<Option<String>>) -> Option<String> {
    let next = tokio::time::timeout(Duration::from_secs(60), seen.recv()).await;
    next.expect("the wait resolved the key again").expect("the waiter is still running")
}

/// Python waits by key; Rust submits the first task only once the wait is
/// seen polling an empty key, replaces it once the wait is seen holding
/// it, and completes the replacement.
async fn python_follows_a_rust_replace(shared: Shared) {
    let client = &shared.client;
    let mut waiter = spawn_peer(&["wait-key", &shared.peer_db, "report-9", "60000"]);
    assert_eq!(waiter.next_json().await, json!({"resolved": null}), "the wait starts on an empty key");
    let first = client.submit("report", &json!({"v": 1})).key("report-9").await.expect("submit");
    assert_eq!(waiter.next_json().await, json!({"resolved": first.id}), "the wait picks the first task up");
    let replace = SubmitOptions::new().key("report-9").conflict(Conflict::Replace);
    let second = client.submit("report", &json!({"v": 2})).options(replace).await.expect("replace");
    let rust = session(client, "rust", Duration::from_secs(60));
    let claimed = rust.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(5)], vec![]).await.expect("claim");
    assert_eq!(claimed[0].id, second.id, "the replaced task was canceled");
    rust.complete(&second.id, json!("v2 done")).await.expect("complete");
    let rest = waiter.finish().await;
    let (done, resolved) = rest.split_last().expect("the peer printed the task it waited for");
    assert_eq!(resolved, [json!({"resolved": second.id})], "the wait moved onto the replacement");
    assert_eq!((done["id"].as_str(), done["status"].as_str()), (Some(second.id.as_str()), Some("succeeded")));
    assert_eq!(done["result"], "v2 done");
    shared.client.close().await.expect("close");
}

/// Rust waits by key (through a store that reports what the key resolves
/// to); Python submits, replaces and completes, each step only once the
/// wait is seen where it should be.
async fn rust_follows_a_python_replace(shared: Shared) {
    let (send, mut seen) = mpsc::unbounded_channel();
    let inner = Arc::clone(&shared.store);
    let watched = CairnQ::new(Forwarding(Resolutions { inner, seen: send, last: parking_lot::Mutex::new(None) }));
    let waiter = tokio::spawn(async move {
        let wait = WaitOptions::new()
            .timeout(Duration::from_secs(60))
            .polling(Duration::from_millis(20), Duration::from_millis(100));
        watched.wait_by_key("report-7", &wait).await
    });
    let db = shared.peer_db.as_str();
    assert_eq!(next_resolution(&mut seen).await, None, "the wait starts on an empty key");
    let first = peer(&["submit-keyed", db, "report", "report-7", "reuse", r#"{"v": 1}"#]);
    assert_eq!(next_resolution(&mut seen).await.as_deref(), first["id"].as_str(), "the wait picks the first up");
    let second = peer(&["submit-keyed", db, "report", "report-7", "replace", r#"{"v": 2}"#]);
    assert_ne!(first["id"], second["id"]);
    let second_id = second["id"].as_str().expect("an id").to_string();
    peer(&["complete-key", db, "report-7", r#""v2 done by python""#]);
    let done = waiter.await.expect("the waiter task").expect("the wait ends");
    assert_eq!((done.id.as_str(), done.status), (second_id.as_str(), TaskStatus::Succeeded));
    assert_eq!(done.result_as::<String>().expect("a string result"), "v2 done by python");
    assert_eq!(next_resolution(&mut seen).await, Some(second_id), "the wait moved onto the replacement");
    shared.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_waits_by_key_on_a_task_rust_replaces() {
    python_follows_a_rust_replace(on_sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_waits_by_key_on_a_task_python_replaces() {
    rust_follows_a_python_replace(on_sqlite().await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_waits_by_key_on_a_task_rust_replaces_on_postgres() {
    python_follows_a_rust_replace(on_postgres().await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_waits_by_key_on_a_task_python_replaces_on_postgres() {
    rust_follows_a_python_replace(on_postgres().await).await;
}
