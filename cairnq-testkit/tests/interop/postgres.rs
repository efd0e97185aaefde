//! Cross-language tests on one Postgres database: the Python reference SDK
//! (cairnq==0.15.1 from PyPI, run as a black box through `interop/peer.py`)
//! and this workspace join each other's installation without migrating,
//! refuse to split one, and run each other's tasks.

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, ErrorKind, TaskStatus};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{dsn_with_database, fresh_schema_name, raw, test_dsn};
use cairnq_testkit::support::session;
use serde_json::json;

use cairnq_protocol::Dialect;

use crate::support::{extension_migrations, peer, peer_error, python_task_matches};

pub(crate) fn dsn() -> String {
    test_dsn().expect("a test Postgres server")
}

/// The peer's spelling of "this DSN, with the schema option".
pub(crate) fn with_schema(dsn: &str, schema: &str) -> String {
    format!("{dsn}#schema={schema}")
}

pub(crate) async fn rust_store(dsn: &str, schema: &str) -> PostgresStore {
    PostgresStore::connect_with(dsn, PostgresOptions::new().schema(schema).listen(false)).await.expect("connect")
}

/// `(file name, applied_at_ms)` rows of a schema's migration ledger.
async fn ledger(dsn: &str, schema: &str) -> Vec<(String, i64)> {
    let sql = format!("select name, applied_at_ms from {schema}.cairnq_migrations order by name");
    raw(dsn).await.query(&sql, &[]).await.expect("ledger").iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Every index of a schema's cairnq tables, and the names of its triggers,
/// the schema name blanked out so two installations compare equal. (The
/// trigger's DDL is not compared: Python's 0003 adds a `WHEN` clause that
/// skips rows becoming running, ours returns early inside the function —
/// the same notifications either way.)
async fn definitions(dsn: &str, schema: &str) -> Vec<String> {
    let sql = "select replace(indexdef, $1 || '.', '') from pg_indexes where schemaname = $1
               union all
               select 'trigger ' || t.tgname from pg_trigger t
                 join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
                where n.nspname = $1 and not t.tgisinternal
               order by 1";
    raw(dsn).await.query(sql, &[&schema]).await.expect("definitions").iter().map(|r| r.get(0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_side_joins_the_others_installation_without_migrating() {
    let dsn = dsn();
    let by_python = fresh_schema_name();
    peer(&["create", &with_schema(&dsn, &by_python)]);
    let python_ledger = ledger(&dsn, &by_python).await;
    rust_store(&dsn, &by_python).await;
    // Rust adds only its extension migrations (schedules); the shared rows stay as Python wrote them.
    let extended = ledger(&dsn, &by_python).await;
    let (shared, added): (Vec<_>, Vec<_>) = extended.into_iter().partition(|(name, _)| !name.starts_with("ext_"));
    assert_eq!(shared, python_ledger, "Rust applied a shared migration to a Python installation");
    let added: Vec<&str> = added.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(added, extension_migrations(Dialect::Postgres), "Rust adds its extensions");

    let by_rust = fresh_schema_name();
    rust_store(&dsn, &by_rust).await;
    let rust_ledger = ledger(&dsn, &by_rust).await;
    peer(&["create", &with_schema(&dsn, &by_rust)]);
    assert_eq!(ledger(&dsn, &by_rust).await, rust_ledger, "Python applied a migration to a Rust installation");

    let names = |l: &[(String, i64)]| l.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let shared_names =
        |l: &[(String, i64)]| names(l).into_iter().filter(|n| !n.starts_with("ext_")).collect::<Vec<_>>();
    assert_eq!(names(&python_ledger), shared_names(&rust_ledger), "the same shared ledger, 0003_notify.sql included");
    assert_eq!(definitions(&dsn, &by_python).await, definitions(&dsn, &by_rust).await, "indexes and trigger differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neither_side_splits_an_installation_the_other_made() {
    // A database of its own, so the default search_path (public) reaches no
    // installation while one exists in another schema.
    let db = fresh_schema_name();
    raw(&dsn()).await.batch_execute(&format!("create database {db}")).await.expect("create database");
    let db_dsn = dsn_with_database(&dsn(), &db);

    peer(&["create", &with_schema(&db_dsn, "python_jobs")]);
    let err = PostgresStore::connect(&db_dsn).await.expect_err("Rust refuses to start a second installation");
    assert_eq!(err.kind(), ErrorKind::SchemaMismatch, "{err}");
    assert!(err.to_string().contains("python_jobs"), "{err}");

    rust_store(&db_dsn, "rust_jobs").await;
    let refused = peer_error(&["create", &db_dsn]);
    assert!(refused.contains("SchemaMismatch") && refused.contains("rust_jobs"), "Python saw no split: {refused}");

    let public = "select count(*) from pg_tables where schemaname = 'public' and tablename like 'cairnq%'";
    assert_eq!(raw(&db_dsn).await.query_one(public, &[]).await.expect("count").get::<_, i64>(0), 0);
    raw(&dsn()).await.batch_execute(&format!("drop database {db} with (force)")).await.expect("drop database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cross_both_ways_column_for_column() {
    let dsn = dsn();
    let schema = fresh_schema_name();
    let shared = with_schema(&dsn, &schema);
    let client = CairnQ::new(rust_store(&dsn, &schema).await);

    let ours = client
        .submit("rs_job", &json!({"list": [1, 2.5, "ü"], "deep": {"x": null}}))
        .metadata(json!({"from": "rust"}))
        .priority(3)
        .await
        .expect("submit");
    python_task_matches(&ours, &peer(&["get", &shared, &ours.id]));
    let by_python = peer(&["claim-complete", &shared, "rs_job", r#"{"ok": [1, 2.5]}"#]);
    let settled = client.get(&ours.id).await.expect("get").expect("row");
    assert_eq!((settled.status, settled.worker_id.as_deref()), (TaskStatus::Succeeded, Some("worker_python")));
    python_task_matches(&settled, &by_python["completed"]);

    let theirs = peer(&["submit", &shared, "py_job", r#"{"text": "héllo", "n": 7}"#]);
    let id = theirs["id"].as_str().expect("id").to_string();
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["py_job".to_string()]);
    let rust = session(&client, "worker_rust", Duration::from_secs(30));
    assert_eq!(rust.claim(vec![draw], vec![]).await.expect("claim")[0].id, id);
    let done = rust.complete(&id, json!({"by": "rust"})).await.expect("done");
    python_task_matches(&done, &peer(&["get", &shared, &id]));
}
