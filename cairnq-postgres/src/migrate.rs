//! Installing and upgrading the cairnq tables on connect.
//!
//! In order: (1) under an advisory lock, so concurrent connectors cannot
//! race on catalog rows, create the schema (when one was given) or refuse
//! to start a second installation beside an existing one
//! (`SchemaMismatch`), refuse a database of another protocol version before
//! writing anything, and create the ledger; (2) apply each missing
//! migration in file-name order, each in its own transaction that first
//! takes `lock table cairnq_migrations in exclusive mode` and re-checks the
//! ledger, so processes cold-starting together never both apply one; (3)
//! read `protocol_version` again and refuse anything but 1.

use cairnq_core::{Error, Result, could_not};
use cairnq_protocol::{Migration, postgres};
use cairnq_sql::{Installed, Query, Sql, check_protocol_version};

use crate::conn::{Conn, Tx};
use crate::error::classify;
use crate::exec::{Exec, answer, opt_row, rows, run_sql};
use crate::options::quote_ident;
use crate::row::col;

// Postgres-only SQL lives here rather than in cairnq-protocol: the
// protocol's statement sets must be identical across dialects, and these
// have no SQLite counterpart.

/// Serializes installation work of concurrent connectors (any SDK version
/// of ours) on one database.
pub(crate) const LOCK_INSTALL: &str = "select pg_advisory_xact_lock(hashtextextended('cairnq:install', 0))";
const SCHEMA_EXISTS: &str = "select exists (select 1 from pg_namespace where nspname = $1)";
/// Every schema holding a cairnq installation, wherever the search_path is.
pub(crate) const INSTALLATIONS: &str = "select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace \
     where c.relname = 'cairnq_tasks' and c.relkind in ('r', 'p') order by 1";
const SEARCH_PATH: &str = "select current_setting('search_path') as search_path";
const CURRENT_SCHEMA: &str = "select current_schema() as current";
pub(crate) const LOCK_LEDGER: &str = "lock table cairnq_migrations in exclusive mode";

/// Whose pool the store runs on, which says who puts the schema on the
/// connections' search_path (and who closes the pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PoolOrigin {
    /// Ours (`PostgresStore::connect`): a `post_create` hook sets it.
    Ours,
    /// The application's (`PostgresStore::from_pool`): it is checked, since
    /// migrating elsewhere would install cairnq where nobody looks.
    Application,
    /// The application's, in pooler mode: the schema is set per
    /// transaction, whatever the connections' own search_path.
    ApplicationPooled,
}

/// Brings the database to the newest schema and checks its protocol version.
pub(crate) async fn install(client: &mut Conn, schema: Option<&str>, origin: PoolOrigin) -> Result<()> {
    prepare(client, schema, origin).await?;
    for migration in postgres::MIGRATIONS {
        if !applied(&*client, migration).await? {
            apply(client, migration).await?;
        }
    }
    refresh_statistics(&*client).await?;
    check_protocol_version(protocol_version(&*client).await?.as_deref(), Installed::Done)
}

/// [`Install::Existing`](cairnq_core::Install::Existing): the installation
/// this connection's search_path reaches must be there, in this SDK's
/// protocol version. Reads only; creates no schema, table or ledger.
pub(crate) async fn require_installation(client: &Conn, schema: Option<&str>) -> Result<()> {
    if !table_exists(client, "cairnq_tasks").await? {
        let place =
            schema.map_or_else(|| "on this connection's search_path".to_string(), |s| format!("in schema {s:?}"));
        let found = installations(client).await?;
        let elsewhere = if found.is_empty() {
            "none in this database".to_string()
        } else {
            format!("there is one in {}", schemas(&found))
        };
        return Err(Error::Unusable {
            message: format!("no cairnq installation {place} ({elsewhere}); nothing was changed"),
            source: None,
        });
    }
    check_protocol_version(protocol_version(client).await?.as_deref(), Installed::Done)
}

/// Every schema of the database holding a cairnq installation.
pub(crate) async fn installations(exec: &impl Exec) -> Result<Vec<String>> {
    let found = run_sql(exec, "look for cairnq installations", INSTALLATIONS, &[]).await?;
    found.iter().map(|r| col::<String>(r, "nspname")).collect()
}

async fn prepare(client: &mut Conn, schema: Option<&str>, origin: PoolOrigin) -> Result<()> {
    let tx = client.begin().await?;
    run_sql(&tx, "lock the installation", LOCK_INSTALL, &[]).await?;
    match schema {
        Some(schema) => {
            create_schema_if_absent(&tx, schema).await?;
            if origin == PoolOrigin::Application {
                // Inside the transaction that created the schema: refused,
                // it is not created.
                refuse_other_current_schema(&tx, schema).await?;
            }
        }
        None => refuse_second_installation(&tx).await?,
    }
    if table_exists(&tx, "cairnq_meta").await? {
        check_protocol_version(protocol_version(&tx).await?.as_deref(), Installed::NotYet)?;
    }
    rows(&tx, &Query::new(Sql::CreateMigrationLedger)).await?;
    tx.commit().await
}

async fn create_schema_if_absent(tx: &Tx<'_>, schema: &str) -> Result<()> {
    let exists: bool = col(&one(tx, &format!("look for schema {schema}"), SCHEMA_EXISTS, schema).await?, "exists")?;
    if !exists {
        let create = format!("create schema {}", quote_ident(schema));
        run_sql(tx, &format!("create schema {schema}"), &create, &[]).await?;
    }
    Ok(())
}

/// No schema was given: the search_path decides where the tables live. If
/// it reaches none but installations exist elsewhere, connecting would
/// create a second one and split the queue.
pub(crate) async fn refuse_second_installation(tx: &impl Exec) -> Result<()> {
    if table_exists(tx, "cairnq_tasks").await? {
        return Ok(());
    }
    let schemas = installations(tx).await?;
    let Some(first) = schemas.first() else { return Ok(()) };
    let path_row = run_sql(tx, "read the search_path", SEARCH_PATH, &[]).await?;
    let path: String = path_row.first().map(|r| col(r, "search_path")).transpose()?.unwrap_or_default();
    Err(Error::SchemaMismatch(format!(
        "cairnq is installed in {} but this connection's search_path ({path}) reaches none of them; \
         connecting would create a second installation. Pass the schema option, e.g. schema {first:?}",
        self::schemas(&schemas)
    )))
}

/// The application's connections must resolve unqualified names in
/// `schema` (the first schema of their search_path).
async fn refuse_other_current_schema(tx: &Tx<'_>, schema: &str) -> Result<()> {
    let found = run_sql(tx, "read the current schema", CURRENT_SCHEMA, &[]).await?;
    let current: Option<String> = found.first().map(|r| col(r, "current")).transpose()?.flatten();
    if current.as_deref() == Some(schema) {
        return Ok(());
    }
    Err(Error::validation(
        "schema",
        format!(
            "the pool's connections resolve names in schema {current:?}, not {schema:?}: put {schema:?} first \
             on their search_path (options=-csearch_path%3D{schema} in the DSN, or a post_create hook)"
        ),
    ))
}

/// "schema a" or "schemas a, b": the installations found, for a message.
fn schemas(found: &[String]) -> String {
    let noun = if found.len() == 1 { "schema" } else { "schemas" };
    format!("{noun} {}", found.join(", "))
}

async fn one(tx: &Tx<'_>, doing: &str, sql: &str, arg: &str) -> Result<tokio_postgres::Row> {
    let found = run_sql(tx, doing, sql, &[&arg]).await?;
    found.into_iter().next().ok_or_else(|| Error::corrupt_row(could_not(doing, "the database answered no row")))
}

pub(crate) async fn table_exists(exec: &impl Exec, table: &'static str) -> Result<bool> {
    answer(exec, &Query::new(Sql::TableExists).arg("table", table)).await
}

async fn applied(exec: &impl Exec, migration: &Migration) -> Result<bool> {
    answer(exec, &Query::new(Sql::MigrationApplied).arg("name", migration.file_name)).await
}

async fn apply(client: &mut Conn, migration: &Migration) -> Result<()> {
    let tx = client.begin().await?;
    run_sql(&tx, "lock the migration ledger", LOCK_LEDGER, &[]).await?;
    if !applied(&tx, migration).await? {
        let doing = format!("apply migration {}", migration.file_name);
        tx.batch_execute(migration.sql).await.map_err(|e| classify(&doing, migration.file_name, e))?;
        rows(&tx, &Query::new(Sql::RecordMigration).arg("name", migration.file_name)).await?;
    }
    tx.commit().await
}

/// A table never analyzed gets one ANALYZE after migrating; autovacuum
/// keeps the statistics fresh from then on (when it is on at all).
async fn refresh_statistics(exec: &impl Exec) -> Result<()> {
    let analyzed = answer(exec, &Query::new(Sql::TasksAnalyzed)).await?;
    let autovacuum = answer(exec, &Query::new(Sql::OptimizePlanner)).await?;
    if !analyzed || !autovacuum {
        rows(exec, &Query::new(Sql::AnalyzeTasks)).await?;
    }
    Ok(())
}

async fn protocol_version(exec: &impl Exec) -> Result<Option<String>> {
    let read = Query::new(Sql::ReadMeta).arg("key", "protocol_version");
    opt_row(exec, &read).await?.map(|r| col(&r, "value")).transpose()
}
