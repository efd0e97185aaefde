//! Connecting: concurrent migration, the protocol version guard, the schema
//! option and the installation guard, and bad input that must fail fast
//! with a typed error.

use std::time::Duration;

use cairnq_core::ErrorKind;
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::{TestRole, dsn_with_database, fresh_schema_name};

use crate::support::{count, dsn, fresh, raw};

/// A connect attempt must end on its own; this only stops a hung test.
const NO_HANG: Duration = Duration::from_secs(60);

/// How many migration files this SDK ships for Postgres (shared and `ext_`).
fn shipped() -> i64 {
    cairnq_protocol::migrations(cairnq_protocol::Dialect::Postgres).len() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_connectors_migrate_once() {
    let schema = fresh_schema_name();
    let connectors: Vec<_> = (0..8)
        .map(|_| {
            let schema = schema.clone();
            tokio::spawn(async move {
                PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(schema).pool_size(1)).await
            })
        })
        .collect();
    for connector in connectors {
        connector.await.expect("join").expect("every concurrent connector succeeds");
    }
    let admin = raw(&dsn()).await;
    let ledger = format!("select count(*) from {schema}.cairnq_migrations");
    assert_eq!(count(&admin, &ledger).await, shipped(), "each migration file (shared and extension) recorded once");
    let notify = format!("select count(*) from {schema}.cairnq_migrations where name = '0003_notify.sql'");
    assert_eq!(count(&admin, &notify).await, 1);
    let trigger = format!(
        "select count(*) from pg_trigger where tgname = 'cairnq_tasks_notify' and tgrelid = '{schema}.cairnq_tasks'::regclass"
    );
    assert_eq!(count(&admin, &trigger).await, 1);
    let version = format!("select value from {schema}.cairnq_meta where key = 'schema_version'");
    assert_eq!(admin.query_one(&version, &[]).await.expect("meta").get::<_, String>(0), "10");

    PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(&schema)).await.expect("reconnect");
    assert_eq!(count(&admin, &ledger).await, shipped(), "connecting again applies nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_protocol_version_is_refused_before_anything_is_written() {
    let (_store, schema) = fresh().await;
    let admin = raw(&dsn()).await;
    let setup = format!(
        "update {schema}.cairnq_meta set value = '2' where key = 'protocol_version';
         delete from {schema}.cairnq_migrations where name = '0010_drop_status_index.sql'"
    );
    admin.batch_execute(&setup).await.expect("setup");

    let refused = PostgresStore::connect_with(&dsn(), PostgresOptions::new().schema(&schema)).await;
    let err = refused.expect_err("protocol_version 2 is refused");
    assert_eq!(err.kind(), ErrorKind::ProtocolVersionMismatch, "{err}");
    let ledger = format!("select count(*) from {schema}.cairnq_migrations");
    assert_eq!(count(&admin, &ledger).await, shipped() - 1, "the missing migration was not applied");
    let version = format!("select value from {schema}.cairnq_meta where key = 'protocol_version'");
    assert_eq!(admin.query_one(&version, &[]).await.expect("meta").get::<_, String>(0), "2");
}

/// A database of its own, so what the default search_path reaches is
/// known; dropped at the end.
struct ScratchDatabase {
    name: String,
}

impl ScratchDatabase {
    async fn create() -> Self {
        let name = fresh_schema_name();
        raw(&dsn()).await.batch_execute(&format!("create database {name}")).await.expect("create database");
        Self { name }
    }

    fn dsn(&self) -> String {
        dsn_with_database(&dsn(), &self.name)
    }

    async fn drop_now(self) {
        let drop = format!("drop database {} with (force)", self.name);
        raw(&dsn()).await.batch_execute(&drop).await.expect("drop database");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_option_and_the_installation_guard() {
    let db = ScratchDatabase::create().await;
    let jobs = PostgresStore::connect_with(&db.dsn(), PostgresOptions::new().schema("jobs")).await.expect("jobs");
    cairnq_core::CairnQ::new(jobs.clone()).submit("a", &serde_json::json!({})).await.expect("submit");
    let admin = raw(&db.dsn()).await;
    assert_eq!(count(&admin, "select count(*) from jobs.cairnq_tasks").await, 1, "the task went to schema jobs");

    let split = PostgresStore::connect(&db.dsn()).await.expect_err("no schema would create a second installation");
    assert_eq!(split.kind(), ErrorKind::SchemaMismatch, "{split}");
    assert!(split.to_string().contains("jobs"), "the error names the existing schema: {split}");
    let public =
        count(&admin, "select count(*) from pg_tables where tablename like 'cairnq%' and schemaname = 'public'");
    assert_eq!(public.await, 0, "nothing was created in public");

    let separator = if db.dsn().contains('?') { '&' } else { '?' };
    let via_path = format!("{}{separator}options=-csearch_path%3Djobs", db.dsn());
    let joined = PostgresStore::connect(&via_path).await.expect("a search_path reaching jobs joins it");
    let seen = cairnq_core::CairnQ::new(joined).list(&cairnq_core::ListFilter::new()).await.expect("list");
    assert_eq!(seen.tasks.len(), 1, "the same installation");
    drop((jobs, admin));
    db.drop_now().await;
}

async fn connect_error(dsn: &str, timeout: Duration) -> cairnq_core::Error {
    let options = PostgresOptions::new().connect_timeout(timeout).listen(false);
    let attempt = tokio::time::timeout(NO_HANG, PostgresStore::connect_with(dsn, options)).await;
    attempt.expect("connect returned instead of hanging").expect_err("connect must fail")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_is_a_transient_storage_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let err = connect_error(&format!("postgres://postgres@127.0.0.1:{port}/x"), Duration::from_secs(3)).await;
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(err.is_transient(), "a server that is not up yet may be later: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_fails_within_the_connect_timeout() {
    // Accepts TCP connections (the backlog does) but never speaks.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let err = connect_error(&format!("postgres://postgres@127.0.0.1:{port}/x"), Duration::from_secs(2)).await;
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(err.is_transient(), "{err}");
    drop(silent);
}

/// A role of the test's own; `None` (after printing why) when the server's
/// user may not create one.
async fn own_role() -> Option<TestRole> {
    match TestRole::create(&dsn()).await {
        Ok(role) => Some(role),
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_a_permanent_storage_error() {
    let Some(role) = own_role().await else { return };
    if !role.password_is_checked(&dsn()).await {
        return eprintln!(
            "skipped: the server lets role {} in with a wrong password (pg_hba.conf trusts it), so there is no \
             refusal to test",
            role.name()
        );
    }
    let err = connect_error(&role.dsn_with_password(&dsn(), "wrong"), Duration::from_secs(5)).await;
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(!err.is_transient(), "retrying a wrong password cannot help: {err}");
    assert!(err.to_string().contains("password"), "{err}");

    // The role may create its schema; dropping the role drops the schema.
    let grant = format!(
        "do $$ begin execute format('grant create on database %I to {}', current_database()); end $$",
        role.name()
    );
    raw(&dsn()).await.batch_execute(&grant).await.expect("grant create");
    let right = PostgresOptions::new().schema(fresh_schema_name()).listen(false);
    PostgresStore::connect_with(&role.dsn(&dsn()), right).await.expect("the right password connects");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_that_may_not_create_tables_gets_a_clear_error() {
    let Some(role) = own_role().await else { return };
    // A database with no installation, so the role's first act is a CREATE;
    // before Postgres 15 everyone may create in `public` unless revoked.
    let db = ScratchDatabase::create().await;
    raw(&db.dsn()).await.batch_execute("revoke create on schema public from public").await.expect("revoke");
    let as_role = role.dsn(&db.dsn());
    for options in [PostgresOptions::new(), PostgresOptions::new().schema("jobs")] {
        let attempt = PostgresStore::connect_with(&as_role, options.listen(false));
        let err = tokio::time::timeout(NO_HANG, attempt).await.expect("no hang").expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
        assert!(!err.is_transient(), "{err}");
        assert!(err.to_string().contains("permission denied"), "{err}");
    }
    db.drop_now().await;
}

#[tokio::test]
async fn bad_options_are_validation_errors() {
    let err = PostgresStore::connect("this is not a dsn").await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::ValidationError, "{err}");
    let err = PostgresStore::connect_with(&dsn(), PostgresOptions::new().pool_size(0)).await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::ValidationError, "{err}");
}
