//! The binary through a real PgBouncer in transaction mode (issue 29):
//! submits installing and writing through it, with a schema and without,
//! and `worker --exec --schema` draining through it. Without pooler mode
//! these failed: named prepared statements collided on the pooler's shared
//! server connections (`prepared statement "s0" already exists`), and the
//! schema, session state, was lost between transactions (`relation
//! "cairnq_tasks" does not exist`). Skipped, saying so, where `pgbouncer`
//! is not installed (CI installs it and requires it).

use std::process::Stdio;
use std::time::{Duration, Instant};

use cairnq_core::TaskStatus;
use cairnq_testkit::postgres::{TestPooler, dsn_with_database};
use serde_json::json;

use crate::support::{Cli, Fixture, Ran};

fn pooler() -> Option<&'static TestPooler> {
    TestPooler::shared().expect("the test PgBouncer")
}

/// Runs the binary in pooler mode, chosen by the environment
/// (`CAIRNQ_PG_POOLER=1`) as a deployment would.
fn pooled(cli: &Cli, args: &[&str]) -> Ran {
    Ran::from(cli.command(args).env("CAIRNQ_PG_POOLER", "1").output().expect("run cairnq"))
}

/// Twenty `cairnq submit`s through the pooler: every one succeeds.
fn twenty_submits(cli: &Cli) {
    for i in 0..20 {
        let ran = pooled(cli, &["submit", "work", "--payload", &format!("{{\"i\": {i}}}")]);
        assert_eq!(ran.code, 0, "submit {i} through the pooler: {}", ran.stderr);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_submits_through_a_transaction_pooler_all_succeed_in_a_schema() {
    let Some(pooler) = pooler() else { return };
    // A fresh schema the binary installs itself, through the pooler.
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    twenty_submits(&Cli { db: pooler.dsn().to_string(), schema: Some(schema.clone()) });
    let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
    let direct = cairnq_testkit::postgres::open(&dsn, &schema).await.expect("open the schema directly");
    let client = cairnq_core::CairnQ::new(direct);
    assert_eq!(client.stats(Some("default")).await.expect("stats")["default"].queued, 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_submits_through_a_transaction_pooler_all_succeed_without_a_schema() {
    let Some(pooler) = pooler() else { return };
    let (fixture, database) = Fixture::postgres_database().await;
    twenty_submits(&Cli { db: dsn_with_database(pooler.dsn(), &database), schema: None });
    assert_eq!(fixture.client.stats(Some("default")).await.expect("stats")["default"].queued, 20);
    fixture.drop_database(&database).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_exec_with_a_schema_drains_through_a_transaction_pooler() {
    let Some(pooler) = pooler() else { return };
    let fixture = Fixture::postgres().await;
    let mut ids = Vec::new();
    for n in 0..30 {
        ids.push(fixture.client.submit("double", &json!({"n": n})).await.expect("submit").id);
    }
    let cli = Cli { db: pooler.dsn().to_string(), schema: fixture.cli.schema.clone() };
    let command = r#"n=$(sed 's/.*"n": *\([0-9]*\).*/\1/'); printf '{"doubled": %s}\n' "$((n * 2))""#;
    let mut worker = cli
        .command(&["--pooler", "worker", "--exec", command, "--concurrency", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the worker");
    let start = Instant::now();
    loop {
        let stats = fixture.client.stats(Some("default")).await.expect("stats")["default"];
        if stats.succeeded == 30 {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) || worker.try_wait().expect("poll the worker").is_some() {
            let _ = worker.kill();
            let output = worker.wait_with_output().expect("the worker's output");
            panic!("not drained ({stats:?}); the worker said: {}", String::from_utf8_lossy(&output.stderr));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::process::Command::new("kill").args(["-TERM", &worker.id().to_string()]).status();
    let output = worker.wait_with_output().expect("the worker's output");
    let log = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "the worker drains and exits 0: {log}");
    assert!(!log.contains("prepared statement") && !log.contains("does not exist"), "{log}");
    // No --listen-url: it says once, at its start, that it polls.
    assert_eq!(log.matches("LISTEN cannot reach Postgres through a transaction pooler").count(), 1, "{log}");
    // A notice of what the configuration asked for, not a warning.
    let notice = log.lines().find(|line| line.contains("new tasks are found by polling every")).expect("the notice");
    assert!(notice.contains("INFO") && !notice.contains("WARN"), "{notice}");
    for (n, id) in ids.iter().enumerate() {
        let task = fixture.client.get(id).await.expect("get").expect("the task");
        assert_eq!(task.status, TaskStatus::Succeeded);
        assert_eq!(task.result.expect("a result").to_value().expect("JSON"), json!({"doubled": 2 * n}));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_names_the_pooler_the_polling_and_the_connections() {
    let Some(pooler) = pooler() else { return };
    let fixture = Fixture::postgres().await;
    let cli = Cli { db: pooler.dsn().to_string(), schema: fixture.cli.schema.clone() };
    // Without pooler mode: what answers, and what to do, before any read
    // that would trip over the pooler.
    cli.run(&["doctor"]).refused(1, "PgBouncer");
    cli.run(&["doctor"]).refused(1, "--pooler");

    // (Exit 1 when the shared test database holds other tests' schemas:
    // more than one installation is a problem the doctor reports.)
    let report = pooled(&cli, &["doctor", "-o", "json"]);
    let report: serde_json::Value =
        serde_json::from_str(&report.stdout).unwrap_or_else(|e| panic!("doctor's JSON ({e}): {}", report.stderr));
    let postgres = &report["postgres"];
    assert_eq!(postgres["pooler_mode"], json!(true));
    assert!(postgres["pooler"].as_str().expect("a pooler answers").contains("PgBouncer"), "{postgres}");
    assert!(postgres["wakeups"].as_str().expect("wakeups").starts_with("polling"), "{postgres}");
    let names: Vec<&str> = postgres["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .filter_map(|c| c["application_name"].as_str())
        .collect();
    assert!(names.contains(&"cairnq-rs doctor"), "the doctor's own connection is among them: {names:?}");

    // Straight to Postgres, the doctor sees no pooler.
    let direct = fixture.cli.run(&["doctor", "-o", "json"]);
    let direct: serde_json::Value = serde_json::from_str(&direct.stdout).expect("doctor's JSON");
    assert_eq!(direct["postgres"]["pooler"], serde_json::Value::Null);
    assert!(direct["postgres"]["wakeups"].as_str().expect("wakeups").starts_with("push"));
}
