//! The Python SDK (0.15.1) as a producer through a real PgBouncer in
//! transaction mode, and `cairnq worker --exec --pooler` draining what it
//! submitted through the same pooler (issue 29's interop test).
//!
//! The SDK cannot be given the pooler's DSN as is: from a DSN it builds an
//! asyncpg pool that names and caches a prepared statement per query, and
//! through a transaction pooler those collide on shared server connections
//! (`prepared statement "__asyncpg_stmt_1__" already exists`) once the
//! pooler's connections have been used; its `schema=` is a startup
//! parameter PgBouncer refuses, so the database is one of its own. The
//! producer (`cairnq-testkit/interop/pooled_producer.py`) hands the SDK
//! its own connection layer through the SDK's public `PgExecutor`
//! protocol: an asyncpg pool with `statement_cache_size=0`, as asyncpg
//! documents for PgBouncer. The submits, migrations check and SQL are the
//! SDK's. Skipped, saying so, where `pgbouncer` is not installed.

use std::path::Path;
use std::process::Command;

use cairnq_core::TaskStatus;
use cairnq_testkit::postgres::{TestPooler, dsn_with_database};
use serde_json::json;

use crate::fleet::{Fleet, count};
use crate::support::{Cli, Fixture, python};

const TASKS: u64 = 300;

/// Runs the pooled Python producer; the ids it submitted.
fn python_submits(dsn: &str, name: &str, count: u64) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cairnq-testkit/interop/pooled_producer.py");
    let output = Command::new(python())
        .arg(script)
        .args([dsn, name, &count.to_string(), "8"])
        .output()
        .expect("run the Python producer");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python producer failed through the pooler: {stderr}");
    serde_json::from_slice(&output.stdout).expect("the ids as JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_submits_through_a_transaction_pooler_and_a_pooled_exec_worker_drains_it() {
    let Some(pooler) = TestPooler::shared().expect("the test PgBouncer") else { return };
    let (fixture, database) = Fixture::postgres_database().await;
    let cli = Cli { db: dsn_with_database(pooler.dsn(), &database), schema: None };

    let ids = python_submits(&cli.db, "from_python", TASKS);
    assert_eq!(ids.len() as u64, TASKS);
    assert_eq!(count(&fixture.client, "default", TaskStatus::Queued).await, TASKS);

    let mut fleet = Fleet::start(&cli, 1, &["--pooler"], &["--concurrency", "8"]);
    let client = &fixture.client;
    fleet
        .until("the worker drained what Python submitted", || async {
            count(client, "default", TaskStatus::Succeeded).await == TASKS
        })
        .await;
    let runs = fleet.runs();
    fleet.stop();
    for (n, id) in ids.iter().enumerate() {
        let task = fixture.client.get(id).await.expect("get").expect("the task");
        assert_eq!((task.name.as_str(), task.status, task.attempt), ("from_python", TaskStatus::Succeeded, 1));
        assert_eq!(task.result.expect("a result").to_value().expect("JSON"), json!({"n": n}));
        assert_eq!(runs.get(id), Some(&1), "{id} ran once");
    }
    fixture.drop_database(&database).await;
}
