//! A caught handler panic is not reported again by the panic hook (the
//! task's envelope records it), nor is a panic of the handler's
//! `succeed_with` closure on SQLite's writer thread, while every other
//! panic of the process still reaches the hook the application installed.
//! One test in a binary of its own: the panic hook is global to the process.

use std::sync::{Arc, Mutex};

use cairnq_core::{CairnQ, TaskStatus, codes};
use cairnq_sqlite::SucceedWith;
use cairnq_testkit::support::{eventually, finished};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn handler_panics_reach_the_envelope_not_the_panic_hook() {
    let reported: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = reported.clone();
    std::panic::set_hook(Box::new(move |info| {
        seen.lock().expect("lock").push(info.to_string());
    }));
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(cairnq_sqlite::SqliteStore::open(dir.path().join("q.db")).await.expect("open"));
    let client = CairnQ::from_shared(store.clone());
    let mut worker = Worker::new(client.clone(), WorkerOptions::new()).expect("worker");
    worker
        .task("async_boom", |_ctx: TaskContext, _: Value| async move {
            if true {
                panic!("async kaboom");
            }
            Ok::<(), TaskError>(())
        })
        .expect("register");
    worker
        .blocking_task("blocking_boom", |_ctx: TaskContext, _: Value| -> Result<(), TaskError> {
            panic!("blocking kaboom")
        })
        .expect("register");
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let answers = answered.clone();
    worker
        .task("closure_boom", move |ctx: TaskContext, _: Value| {
            let (answers, store) = (answers.clone(), store.clone());
            async move {
                let panicking = |_: &cairnq_sqlite::rusqlite::Connection| -> cairnq_sqlite::rusqlite::Result<i64> {
                    panic!("closure kaboom")
                };
                let answer = ctx.succeed_with(&store, panicking).await.expect_err("the closure panicked");
                answers.lock().expect("lock").push(answer.to_string());
                Ok::<_, TaskError>(json!("not written: the panic settled the attempt"))
            }
        })
        .expect("register");
    let running = worker.spawn();
    let task = client.submit("closure_boom", &Value::Null).max_attempts(1).await.expect("submit");
    let done = finished(&client, &task.id).await;
    let envelope = done.error_envelope().expect("an envelope");
    assert_eq!((done.status, envelope.error_type.as_str(), envelope.retryable), (TaskStatus::Failed, "Panic", true));
    assert_eq!(envelope.code, codes::HANDLER_ERROR);
    assert!(envelope.message.contains("succeed_with closure panicked: closure kaboom"), "{}", envelope.message);
    // The attempt is settled by the worker when the closure panics; the
    // handler hears the answer only after that, so its note may come later.
    eventually("the handler heard the closure's answer", || {
        let heard = !answered.lock().expect("lock").is_empty();
        async move { heard }
    })
    .await;
    let answers = answered.lock().expect("lock").clone();
    assert!(answers[0].contains("the application's closure (complete_with) panicked: closure kaboom"), "{answers:?}");
    for name in ["async_boom", "blocking_boom"] {
        let task = client.submit(name, &Value::Null).max_attempts(1).await.expect("submit");
        let done = finished(&client, &task.id).await;
        assert_eq!(done.status, TaskStatus::Failed);
        assert!(done.error_envelope().is_some_and(|e| e.message.contains("kaboom")), "the envelope records the panic");
    }
    running.stop_and_join().await.expect("stop");
    // Snapshots, so no assertion holds the lock the hook takes.
    let during_handlers = reported.lock().expect("lock").clone();
    assert!(during_handlers.is_empty(), "handler panics reached the hook: {during_handlers:?}");

    let outside = std::panic::catch_unwind(|| panic!("not a handler"));
    assert!(outside.is_err());
    let after = reported.lock().expect("lock").clone();
    assert!(after.iter().any(|r| r.contains("not a handler")), "other panics still reach the hook: {after:?}");
}
