//! A worker whose store's LISTEN the server refuses for good keeps working
//! by polling and says so once, instead of the store reconnecting forever.
//!
//! The refusal is a real one on the real server: the worker's store runs
//! as a role of the test's own, with a pool of one connection opened while
//! the role could log in; then the role loses LOGIN and the LISTEN
//! connection is terminated. The pooled connection lives on (Postgres
//! checks LOGIN only when a session starts), every reconnect of the
//! listener is refused with `28000 role ... is not permitted to log in`,
//! which no retry cures. (A transaction pooler refusing LISTEN answers
//! `0A000 feature_not_supported`, classified the same way; PgBouncer in
//! transaction mode does not refuse at all, see the Postgres crate's
//! `listener` docs.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairnq_core::{CairnQ, Store, TaskStatus};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{TestRole, fresh_schema_name, raw, test_dsn};
use cairnq_testkit::support::{eventually, finished};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_refused_for_good_is_reported_once_and_the_worker_polls() {
    let dsn = test_dsn().expect("a test Postgres server");
    let role = match TestRole::create(&dsn).await {
        Ok(role) => role,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let admin = raw(&dsn).await;
    let grant = format!(
        "do $$ begin execute format('grant create on database %I to {}', current_database()); end $$",
        role.name()
    );
    admin.batch_execute(&grant).await.expect("grant create");
    let schema = fresh_schema_name();
    let options = PostgresOptions::new().schema(&schema).pool_size(1);
    let store = PostgresStore::connect_with(&role.dsn(&dsn), options).await.expect("connect as the role");
    eventually("the listener is up", || async { store.listening() }).await;

    let issues = Arc::new(Mutex::new(Vec::new()));
    let seen = issues.clone();
    let worker_options = WorkerOptions::new().poll_interval(Duration::from_millis(100)).on_error(move |issue| {
        let lost = matches!(issue, WorkerIssue::WakeupsLost { .. });
        seen.lock().expect("issues").push((lost, issue.to_string()));
    });
    let mut worker = Worker::from_store(store.clone(), worker_options).expect("worker");
    worker.task("echo", |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n) }).expect("register");
    let running = worker.spawn();

    let refuse = format!(
        "alter role {name} nologin; select pg_terminate_backend(pid) from pg_stat_activity \
         where usename = '{name}' and query ilike 'listen %'",
        name = role.name()
    );
    admin.batch_execute(&refuse).await.expect("refuse the role new sessions; end its LISTEN session");
    let lost = || issues.lock().expect("issues").iter().filter(|(lost, _)| *lost).count();
    eventually("the lost wakeups are reported", || async { lost() == 1 }).await;
    assert!(!store.capabilities().push_wakeups, "the store no longer claims push wakeups");
    assert!(!store.listening());

    let submitter = CairnQ::new(
        PostgresStore::connect_with(&dsn, PostgresOptions::new().schema(&schema).listen(false))
            .await
            .expect("connect as the server's user"),
    );
    for n in 0..3 {
        let task = submitter.submit("echo", &n).await.expect("submit");
        let done = finished(&submitter, &task.id).await;
        assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(serde_json::json!(n).into())));
    }
    // Several of the listener's retry pauses (100 ms doubling to 5 s) have
    // passed: a listener still retrying would not have ended, and one that
    // reported each refusal would have reported again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reported = issues.lock().expect("issues").clone();
    assert_eq!(lost(), 1, "reported once: {reported:?}");
    let (_, text) = reported.iter().find(|(lost, _)| *lost).expect("the report");
    assert!(text.contains("polling every 100ms") && text.contains("not permitted to log in"), "{text}");
    let endpoint = dsn.split('@').nth(1).and_then(|rest| rest.split('/').next()).expect("host:port");
    assert!(text.contains(&format!("while trying to listen for push wakeups from Postgres at {endpoint}")), "{text}");

    running.stop_and_join().await.expect("the worker stops cleanly");
    store.close().await.expect("close");
    admin.batch_execute(&format!("alter role {} login", role.name())).await.expect("login again");
}
