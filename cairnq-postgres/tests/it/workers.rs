//! Real worker processes (`cairnq-test-worker`, started through the
//! testkit's child helpers) on a real server: several hosts sharing one
//! queue, push wakeups against a long poll, and a server restart mid-drain.
//! What matters is behaviour: every task runs once and ends succeeded.

use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Store, TaskSpec};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::StoreLocator;
use cairnq_testkit::child::{ChildArgs, ChildMode, ChildProcess};
use cairnq_testkit::postgres::TestServer;
use cairnq_testkit::support::eventually_within;
use serde_json::json;

use crate::support::{count, dsn, fresh_client, raw};

/// Far longer than anything here should take; reaching it is a failure.
const LONG: Duration = Duration::from_secs(300);

/// Starts a worker process (killed when dropped, so a failed test leaves
/// none behind).
fn spawn_worker(args: &ChildArgs) -> ChildProcess {
    ChildProcess::spawn(args).expect("start a worker process")
}

/// SIGTERM, a clean exit, and every line not read yet.
async fn stop_worker(mut worker: ChildProcess) -> Vec<String> {
    let (status, rest) = worker.stop(LONG).await.expect("the worker process exits after SIGTERM");
    assert!(status.success(), "the worker process exited with {status}: {rest:?}");
    rest
}

/// Polls `probe` until it holds, failing after [`LONG`].
async fn eventually<F, Fut>(what: &str, probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_within(what, LONG, probe).await;
}

/// `select count(*) from <schema>.cairnq_tasks where <condition>`.
async fn tasks_where(db: &tokio_postgres::Client, schema: &str, condition: &str) -> i64 {
    count(db, &format!("select count(*) from \"{schema}\".cairnq_tasks where {condition}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_worker_processes_drain_ten_thousand_tasks_each_run_once() {
    const TASKS: i64 = 10_000;
    let (client, _store, schema) = fresh_client().await;
    let mut args = ChildArgs::new(StoreLocator::Postgres { dsn: dsn(), schema: schema.clone() }, ChildMode::Sleep);
    // A lease no run comes near: any second run would be a double claim,
    // not a recovery after an expiry.
    (args.concurrency, args.lease_ms, args.drain_ms) = (8, 600_000, 5_000);
    let workers: Vec<_> = (0..4).map(|_| spawn_worker(&args)).collect();

    let started = Instant::now();
    for _ in 0..TASKS / 500 {
        let specs: Vec<_> = (0..500).map(|_| TaskSpec::new("sleep", &json!({"ms": 0}))).collect();
        client.submit_many(&specs).await.expect("submit_many");
    }
    let db = raw(&dsn()).await;
    eventually("every task succeeded", || async { tasks_where(&db, &schema, "status = 'succeeded'").await == TASKS })
        .await;
    eprintln!("4 worker processes drained {TASKS} tasks in {:?} (submits included)", started.elapsed());
    for worker in workers {
        stop_worker(worker).await;
    }

    assert_eq!(tasks_where(&db, &schema, "true").await, TASKS);
    assert_eq!(tasks_where(&db, &schema, "attempt <> 1").await, 0, "a handler ran twice");
    let unowned = tasks_where(&db, &schema, "worker_id is null or result is distinct from '{\"slept\": 0}'").await;
    assert_eq!(unowned, 0, "every task has its one worker and its one result");
    let spread = db
        .query(&format!("select worker_id, count(*) from \"{schema}\".cairnq_tasks group by worker_id"), &[])
        .await
        .expect("per-worker counts");
    let spread: Vec<i64> = spread.iter().map(|row| row.get(1)).collect();
    assert!((1..=4).contains(&spread.len()), "only the 4 processes ran tasks: {spread:?}");
    eprintln!("tasks per worker process: {spread:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_wakeups_start_tasks_long_before_a_five_second_poll() {
    let (client, _store, schema) = fresh_client().await;
    let mut args = ChildArgs::new(StoreLocator::Postgres { dsn: dsn(), schema }, ChildMode::Hang);
    (args.concurrency, args.poll_ms, args.lease_ms) = (16, 5_000, 60_000);
    let mut worker = spawn_worker(&args);

    // The first claim happens at start-up; afterwards the worker is idle in
    // a 5 s wait, and gives its listener time to come up.
    let warm_up = client.submit("crash", &json!({})).await.expect("submit");
    let started = worker.line_starting("started ", LONG).await.expect("the worker starts the task");
    assert_eq!(started, format!("started {}", warm_up.id));
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    for _ in 0..10 {
        // Each submit comes right after a claim, so a poll would find it
        // only ~5 s later: a start well before that was pushed.
        let submitted = Instant::now();
        let task = client.submit("crash", &json!({})).await.expect("submit");
        let (at, line) = worker.next_line(LONG).await.expect("the worker starts the task");
        assert_eq!(line, format!("started {}", task.id));
        let delay = at.duration_since(submitted);
        assert!(delay < Duration::from_millis(2_500), "task started {delay:?} after its submit: not pushed");
    }
    stop_worker(worker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_listener_a_polling_worker_drains_every_task() {
    let (client, _store, schema) = fresh_client().await;
    let mut args = ChildArgs::new(StoreLocator::Postgres { dsn: dsn(), schema: schema.clone() }, ChildMode::Sleep);
    (args.concurrency, args.poll_ms, args.lease_ms, args.listen) = (4, 100, 60_000, false);
    let worker = spawn_worker(&args);

    // Spread over time, so most arrive while the worker is waiting.
    for _ in 0..20 {
        client.submit("sleep", &json!({"ms": 0})).await.expect("submit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let db = raw(&dsn()).await;
    eventually("every task succeeded", || async { tasks_where(&db, &schema, "status = 'succeeded'").await == 20 })
        .await;
    stop_worker(worker).await;
    assert_eq!(tasks_where(&db, &schema, "attempt = 1").await, 20);
}

/// Submits until `stop` is set, returning the ids the server acknowledged
/// (a submit that failed during the outage is not counted).
async fn submit_until(client: CairnQ, stop: tokio::sync::watch::Receiver<bool>) -> Vec<String> {
    let mut acknowledged = Vec::new();
    while !*stop.borrow() {
        match client.submit("sleep", &json!({"ms": 10})).await {
            Ok(task) => acknowledged.push(task.id),
            Err(e) => assert!(e.is_transient(), "a restart is reported as transient: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    acknowledged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_drain_loses_no_acknowledged_task() {
    // A server of its own: restarting the shared one would cut every other
    // test's connections.
    let server = TestServer::private("workers").expect("start a private server");
    let schema = "restart_drain";
    let store = PostgresStore::connect_with(server.dsn(), PostgresOptions::new().schema(schema).pool_size(2))
        .await
        .expect("connect");
    let mut args = ChildArgs::new(
        StoreLocator::Postgres { dsn: server.dsn().to_string(), schema: schema.to_string() },
        ChildMode::Sleep,
    );
    (args.concurrency, args.lease_ms, args.report_issues) = (4, 5_000, true);
    let worker = spawn_worker(&args);

    let (stop, stopping) = tokio::sync::watch::channel(false);
    let submitter = tokio::spawn(submit_until(CairnQ::new(store.clone()), stopping));
    let db = raw(server.dsn()).await;
    eventually("the worker is draining", || async { tasks_where(&db, schema, "status = 'succeeded'").await >= 50 })
        .await;
    // Blocks this runtime thread only; the submitter and the worker process
    // run on through the outage.
    tokio::task::block_in_place(|| server.restart()).expect("pg_ctl restart -m fast");
    // Keep submitting after the restart for a while.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.send(true).expect("stop the submitter");
    let acknowledged = submitter.await.expect("submitter");

    let db = raw(server.dsn()).await;
    let ids: Vec<&str> = acknowledged.iter().map(String::as_str).collect();
    let succeeded =
        format!("select count(*) from \"{schema}\".cairnq_tasks where status = 'succeeded' and id = any($1)");
    eventually("every acknowledged task succeeded", || async {
        let row = db.query_one(&succeeded, &[&ids]).await.expect("count succeeded");
        row.get::<_, i64>(0) == ids.len() as i64
    })
    .await;
    let lines = stop_worker(worker).await;
    let issues = lines.iter().filter(|l| l.starts_with("issue ")).count();
    assert!(issues >= 1, "the outage reached the worker's on_error hook: {lines:?}");
    eprintln!("{} acknowledged submits, all succeeded; {issues} worker issues reported", acknowledged.len());
    store.close().await.expect("close");
}

/// Settle writes far slower than the handlers (a test trigger makes every
/// row that turns succeeded cost 1 ms): the worker stops claiming once
/// about a thousand finished calls wait for their settle writes, instead of
/// taking every queued row while the writes lag. Claimed-but-unsettled rows
/// stay under ~3,300 (settle backlog + slots + prefetch buffer + one
/// claim); without the bound nearly all 6,000 would be held at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_settles_bound_what_a_worker_holds() {
    const TASKS: i64 = 6_000;
    let (client, _store, schema) = fresh_client().await;
    let db = raw(&dsn()).await;
    db.batch_execute(&format!(
        "create function \"{schema}\".slow_settle() returns trigger language plpgsql as \
         $$ begin perform pg_sleep(0.001); return new; end $$; \
         create trigger slow_settle before update on \"{schema}\".cairnq_tasks \
         for each row when (new.status = 'succeeded') execute function \"{schema}\".slow_settle();"
    ))
    .await
    .expect("install the slowing trigger");
    let specs: Vec<TaskSpec> = (0..TASKS).map(|_| TaskSpec::new("sleep", &json!({"ms": 0}))).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let mut args = ChildArgs::new(StoreLocator::Postgres { dsn: dsn(), schema: schema.clone() }, ChildMode::Sleep);
    (args.concurrency, args.poll_ms, args.lease_ms) = (64, 50, 120_000);
    let worker = spawn_worker(&args);
    let (mut most_held, deadline) = (0, Instant::now() + Duration::from_secs(120));
    while tasks_where(&db, &schema, "status = 'succeeded'").await < TASKS {
        assert!(Instant::now() < deadline, "the worker did not drain in time");
        most_held = most_held.max(tasks_where(&db, &schema, "status = 'running'").await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop_worker(worker).await;
    eprintln!("most rows held at once: {most_held}");
    assert!(most_held > 1_000, "the settles did lag ({most_held} held at most): the test measured something");
    assert!(most_held < 4_000, "{most_held} claimed rows waited for settles at once");
}
