//! Issue 29's acceptance through a real PgBouncer in transaction mode: a
//! thousand submits from separate `cairnq submit` processes and a thousand
//! from the library (pooler mode), all at once, with no error; three
//! `cairnq worker --exec --pooler --schema` processes drain them, each task
//! run exactly once, with nothing wrong in their logs; and a schedule
//! added through the pooler fires while they run. Skipped, saying so,
//! where `pgbouncer` is not installed (CI installs it and requires it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::TestPooler;
use serde_json::json;

use crate::fleet::{Fleet, POLLS_NOTICE, count};
use crate::support::{Cli, Fixture, Ran};

/// Submits from `cairnq submit` processes, and as many from the library.
const SUBMITS: usize = 1000;
/// `cairnq submit` processes running at once.
const CLI_PARALLEL: usize = 4;
/// Library submits in flight at once.
const LIB_PARALLEL: usize = 8;

/// The queue the schedule fires into.
const TICKS: &str = "ticks";

fn pooled(cli: &Cli, args: &[&str]) -> Ran {
    let mut all = vec!["--pooler"];
    all.extend(args);
    cli.run(&all)
}

/// `SUBMITS` `cairnq submit` processes, `CLI_PARALLEL` at a time; the
/// failures' stderr.
fn cli_submits(cli: &Cli) -> Vec<String> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let runners: Vec<_> = (0..CLI_PARALLEL)
            .map(|_| {
                scope.spawn(|| {
                    let mut failed = Vec::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= SUBMITS {
                            return failed;
                        }
                        let payload = json!({"from": "cli", "n": n}).to_string();
                        let ran = pooled(cli, &["submit", "fleet", "--payload", &payload]);
                        if ran.code != 0 {
                            failed.push(format!("submit {n}: exit {}: {}", ran.code, ran.stderr));
                        }
                    }
                })
            })
            .collect();
        runners.into_iter().flat_map(|r| r.join().expect("a submitting thread")).collect()
    })
}

/// `SUBMITS` library submits through the pooler, `LIB_PARALLEL` at a time;
/// the failures.
async fn library_submits(client: CairnQ) -> Vec<String> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut runners = tokio::task::JoinSet::new();
    for _ in 0..LIB_PARALLEL {
        let (client, next) = (client.clone(), next.clone());
        runners.spawn(async move {
            let mut failed = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= SUBMITS {
                    return failed;
                }
                if let Err(error) = client.submit("fleet", &json!({"from": "library", "n": n})).await {
                    failed.push(format!("library submit {n}: {error}"));
                }
            }
        });
    }
    let mut failed = Vec::new();
    while let Some(done) = runners.join_next().await {
        failed.extend(done.expect("a submitting task"));
    }
    failed
}

#[tokio::test(flavor = "multi_thread")]
async fn two_thousand_submits_and_three_exec_workers_with_a_schema_through_a_transaction_pooler() {
    let Some(pooler) = TestPooler::shared().expect("the test PgBouncer") else { return };
    let fixture = Fixture::postgres().await;
    let schema = fixture.cli.schema.clone().expect("a schema");
    let cli = Cli { db: pooler.dsn().to_string(), schema: Some(schema.clone()) };
    let options = PostgresOptions::new().schema(&schema).pooler(true).pool_size(4);
    let library = CairnQ::new(PostgresStore::connect_with(pooler.dsn(), options).await.expect("connect pooled"));

    let from_library = tokio::spawn(library_submits(library.clone()));
    let from_cli = tokio::task::spawn_blocking({
        let cli = cli.clone();
        move || cli_submits(&cli)
    })
    .await
    .expect("the CLI submits");
    let from_library = from_library.await.expect("the library submits");
    assert!(from_cli.is_empty(), "{} of the CLI's submits failed: {from_cli:#?}", from_cli.len());
    assert!(from_library.is_empty(), "{} of the library's submits failed: {from_library:#?}", from_library.len());
    let total = 2 * SUBMITS as u64;
    assert_eq!(count(&fixture.client, "default", TaskStatus::Queued).await, total);

    // A schedule added through the pooler, fired by the workers' schedule
    // loops (through the pooler too) while they drain.
    let added = pooled(&cli, &["schedule", "add", "tick", "--every", "1s", "--task", "tick", "--queue", TICKS]);
    assert_eq!(added.code, 0, "schedule add through the pooler: {}", added.stderr);

    let args = ["--concurrency", "8", "--queue", "default", "--queue", TICKS];
    let mut fleet = Fleet::start(&cli, 3, &["--pooler"], &args);
    let client = &fixture.client;
    fleet
        .until("the fleet drained every submit and ran a fired schedule", || async {
            count(client, "default", TaskStatus::Succeeded).await == total
                && count(client, TICKS, TaskStatus::Succeeded).await >= 1
        })
        .await;
    let runs = fleet.runs();
    let logs = fleet.stop();

    // No LISTEN here (no --listen-url): each worker says so once.
    for log in &logs {
        assert_eq!(log.matches(POLLS_NOTICE).count(), 1, "{log}");
    }
    let default = client.stats(Some("default")).await.expect("stats")["default"];
    assert_eq!(default.succeeded, total, "{default:?}");
    assert_eq!(default, cairnq_core::QueueCounts { succeeded: total, ..Default::default() });
    // Each claimed once, its result its payload (what the command echoed).
    let direct = cairnq_testkit::postgres::raw(&fixture.cli.db).await;
    let sql = format!(
        "select count(*) filter (where attempt <> 1), count(*) filter (where result is distinct from payload) \
         from {schema}.cairnq_tasks where queue = 'default'"
    );
    let row = direct.query_one(&sql, &[]).await.expect("the tasks' attempts and results");
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (0, 0), "retried or wrong results");
    let fleet_runs: Vec<usize> = runs.values().copied().collect();
    assert!(fleet_runs.iter().all(|&n| n == 1), "every command ran once");
    let ticks = count(client, TICKS, TaskStatus::Succeeded).await;
    assert!(runs.len() as u64 >= total + ticks, "a run per task: {} runs, {total} + {ticks} tasks", runs.len());
}

/// With `--listen-url` (a direct connection for LISTEN) a worker in pooler
/// mode has push wakeups: it does not say it polls, and logs nothing wrong.
/// (How soon it hears of work: cairnq-postgres's `pooler_wakeup.rs`.)
#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_exec_worker_with_a_listen_url_does_not_poll() {
    let Some(pooler) = TestPooler::shared().expect("the test PgBouncer") else { return };
    let fixture = Fixture::postgres().await;
    let cli = Cli { db: pooler.dsn().to_string(), schema: fixture.cli.schema.clone() };
    for n in 0..20 {
        let ran = pooled(&cli, &["submit", "fleet", "--payload", &json!({"n": n}).to_string()]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
    }
    let mut fleet = Fleet::start(&cli, 1, &["--pooler", "--listen-url", &fixture.cli.db], &["--concurrency", "4"]);
    let client = &fixture.client;
    fleet.until("the worker drained", || async { count(client, "default", TaskStatus::Succeeded).await == 20 }).await;
    let logs = fleet.stop();
    assert!(!logs[0].contains(POLLS_NOTICE) && !logs[0].contains("polling"), "{}", logs[0]);
}
