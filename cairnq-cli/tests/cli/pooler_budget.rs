//! A connection budget (issue 29): four `cairnq worker --exec` processes
//! of concurrency 64 drain through a PgBouncer in transaction mode whose
//! server pool is 10 connections, with the same results as four
//! connected straight to Postgres: every task succeeded, each command ran
//! exactly once, the counts equal. 4 x 64 calls at once share those 10
//! server connections because claims and settles are batched and a
//! connection is held only for a transaction. Skipped, saying so, where
//! `pgbouncer` is not installed.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use cairnq_core::{QueueCounts, TaskSpec, TaskStatus};
use cairnq_postgres::tokio_postgres::SimpleQueryMessage;
use cairnq_testkit::postgres::{TestPooler, raw, test_dsn};
use serde_json::json;

use crate::fleet::{Fleet, count};
use crate::support::{Cli, Fixture};

const TASKS: u64 = 1_000;
const WORKERS: usize = 4;
const CONCURRENCY: &str = "64";
/// The pooler's server connections (PgBouncer's `default_pool_size`).
const SERVER_POOL: u16 = 10;

/// What a drain left behind, to compare the two ways of connecting.
#[derive(Debug, PartialEq)]
struct Drained {
    counts: QueueCounts,
    /// Tasks claimed more than once.
    retried: i64,
    /// The payloads' `n`s whose result is the payload (the command echoes it).
    echoed: BTreeSet<i64>,
}

/// Submits `TASKS` tasks (directly), drains them with the fleet of `cli`
/// (with `global` before `worker`), while `watch` runs; checks each
/// command ran once.
async fn drain(fixture: &Fixture, cli: &Cli, global: &[&str], watch: impl Future<Output = ()>) -> Drained {
    let specs: Vec<TaskSpec> = (0..TASKS).map(|n| TaskSpec::new("budget", &json!({"n": n}))).collect();
    for chunk in specs.chunks(500) {
        fixture.client.submit_many(chunk).await.expect("submit_many");
    }
    let mut fleet = Fleet::start(cli, WORKERS, global, &["--concurrency", CONCURRENCY]);
    let client = &fixture.client;
    let drained = fleet.until("the fleet drained every task", || async {
        count(client, "default", TaskStatus::Succeeded).await == TASKS
    });
    tokio::select! {
        () = drained => {}
        () = watch => unreachable!("the watch runs until the drain ends"),
    }
    let runs = fleet.runs();
    fleet.stop();
    let ran_twice: HashMap<&String, &usize> = runs.iter().filter(|(_, n)| **n != 1).collect();
    assert!(ran_twice.is_empty(), "commands ran more than once: {ran_twice:?}");
    assert_eq!(runs.len() as u64, TASKS, "a run per task");

    let schema = fixture.cli.schema.as_deref().expect("a schema");
    let db = raw(&fixture.cli.db).await;
    let retried = db
        .query_one(&format!("select count(*) from {schema}.cairnq_tasks where attempt <> 1"), &[])
        .await
        .expect("attempts")
        .get(0);
    let echoed = db
        .query(&format!("select (payload->>'n')::bigint from {schema}.cairnq_tasks where result = payload"), &[])
        .await
        .expect("results")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let counts = client.stats(Some("default")).await.expect("stats")["default"];
    Drained { counts, retried, echoed }
}

/// The most server and client connections the pooler showed for the test
/// database, sampled from its admin console (`SHOW POOLS`) until dropped.
async fn watch_pools(pooler: &TestPooler, database: &str, most: &std::sync::Mutex<(u64, u64)>) {
    let admin = raw(&cairnq_testkit::postgres::dsn_with_database(pooler.dsn(), "pgbouncer")).await;
    loop {
        let messages = admin.simple_query("show pools").await.expect("show pools");
        for message in messages {
            let SimpleQueryMessage::Row(row) = message else { continue };
            if row.get("database") != Some(database) {
                continue;
            }
            let sum = |columns: &[&str]| -> u64 {
                columns.iter().map(|c| row.get(*c).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum()
            };
            let servers = sum(&["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"]);
            let clients = sum(&["cl_active", "cl_waiting"]);
            let mut most = most.lock().expect("the samples");
            *most = (most.0.max(servers), most.1.max(clients));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn four_workers_of_concurrency_64_drain_through_ten_server_connections_as_they_do_directly() {
    let upstream = test_dsn().expect("the test Postgres server");
    // A pooler of its own: its ten connections are this test's alone.
    let Some(pooler) = TestPooler::private("budget", &upstream, SERVER_POOL).expect("a private PgBouncer") else {
        return;
    };

    let direct = Fixture::postgres().await;
    let through_postgres = drain(&direct, &direct.cli, &[], std::future::pending()).await;

    let pooled = Fixture::postgres().await;
    let cli = Cli { db: pooler.dsn().to_string(), schema: pooled.cli.schema.clone() };
    let database = upstream.rsplit('/').next().and_then(|d| d.split('?').next()).expect("a database").to_string();
    let most = std::sync::Mutex::new((0, 0));
    let through_pooler = drain(&pooled, &cli, &["--pooler"], watch_pools(&pooler, &database, &most)).await;

    let expected = Drained {
        counts: QueueCounts { succeeded: TASKS, ..QueueCounts::default() },
        retried: 0,
        echoed: (0..TASKS as i64).collect(),
    };
    assert_eq!(through_postgres, expected, "straight to Postgres");
    assert_eq!(through_pooler, expected, "through the pooler");
    let (servers, clients) = *most.lock().expect("the samples");
    eprintln!("through the pooler: at most {servers} server connections for {clients} client connections");
    assert!(servers <= u64::from(SERVER_POOL), "{servers} server connections");
    // Every worker went through the pooler (each holds a connection or more).
    assert!(clients >= WORKERS as u64, "{clients} client connections");
}
