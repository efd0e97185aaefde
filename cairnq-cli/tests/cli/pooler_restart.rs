//! A Postgres restart behind a transaction pooler (issue 29): a `cairnq
//! worker --exec --pooler --schema` draining through a real PgBouncer
//! keeps going when the server behind it restarts (`pg_ctl restart -m
//! fast` cuts every server connection the pooler holds): every task
//! submitted before and after succeeds, submits through the pooler work
//! again, and the worker drains and exits 0. A private server and pooler:
//! restarting the shared server would cut every other test's
//! connections. Skipped, saying so, where `pgbouncer` is not installed.

use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{TestPooler, TestServer};
use serde_json::json;

use crate::fleet::{Fleet, POLLS_NOTICE, assert_clean, count};
use crate::support::Cli;

const BEFORE: u64 = 40;
const AFTER: u64 = 20;
const CONCURRENCY: usize = 2;
const SCHEMA: &str = "behind_the_pooler";

#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_worker_keeps_draining_across_a_postgres_restart() {
    let server = TestServer::private("pooler-restart").expect("a private Postgres server");
    let Some(pooler) = TestPooler::private("restart", server.dsn(), 10).expect("a private PgBouncer") else {
        return;
    };
    let options = PostgresOptions::new().schema(SCHEMA).pool_size(2);
    let client = CairnQ::new(PostgresStore::connect_with(server.dsn(), options).await.expect("connect"));
    for n in 0..BEFORE {
        client.submit("job", &json!({"n": n})).await.expect("submit");
    }
    let cli = Cli { db: pooler.dsn().to_string(), schema: Some(SCHEMA.to_string()) };
    // A short lease: a call whose settle the restart cut off runs again
    // soon. Commands slow enough that the restart comes mid-drain.
    let args = ["--concurrency", &CONCURRENCY.to_string(), "--lease", "5s"];
    let mut fleet = Fleet::start_pausing(&cli, 1, &["--pooler"], &args, Duration::from_millis(100));
    fleet
        .until("the drain is under way", || async { count(&client, "default", TaskStatus::Succeeded).await >= 3 })
        .await;

    server.restart().expect("restart the server");

    // Submits through the pooler work again once the server is back.
    let deadline = Instant::now() + Duration::from_secs(60);
    for n in BEFORE..BEFORE + AFTER {
        loop {
            let ran = cli.run(&["--pooler", "submit", "job", "--payload", &json!({"n": n}).to_string()]);
            if ran.code == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "submits through the pooler never worked again: {}", ran.stderr);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let total = BEFORE + AFTER;
    fleet
        .until("every task succeeded", || async { count(&client, "default", TaskStatus::Succeeded).await == total })
        .await;
    let runs = fleet.runs();
    let logs = fleet.drain();
    let log = &logs[0];
    // The outage in two lines, naming the pooler's address, whatever
    // failed meanwhile; leases lost to it; nothing else wrong (no prepared
    // statement or schema lost with the server's sessions).
    let endpoint = pooler.dsn().split('@').nth(1).and_then(|rest| rest.split('/').next()).expect("host:port");
    assert_eq!(log.matches(&format!("the database at {endpoint} is unreachable")).count(), 1, "{log}");
    assert_eq!(log.matches("reconnected after").count(), 1, "{log}");
    let outage = |line: &&str| {
        line.contains(" is unreachable; retrying") || line.contains("lost the lease") || line.contains(POLLS_NOTICE)
    };
    let rest: String = log.lines().filter(|line| !outage(line)).collect::<Vec<_>>().join("\n");
    assert_clean(&rest);
    assert_eq!(runs.len() as u64, total, "a run per task");
    // At least once: a settle the restart cut off (written again for a
    // moment, then given up) leaves its task to run again when its lease
    // runs out, as straight to Postgres. Only the calls running at the
    // restart can be run again.
    let again: usize = runs.values().map(|n| n - 1).sum();
    assert!(again <= CONCURRENCY, "{again} runs again, more than the calls running at the restart: {runs:?}");
    let stats = client.stats(Some("default")).await.expect("stats")["default"];
    assert_eq!((stats.succeeded, stats.failed, stats.queued, stats.running), (total, 0, 0, 0), "{stats:?}");
}
