//! The tools of [`PostgresStore`] that read a database without opening a
//! store on it (no pool, no installation): the migration ledger, the
//! script a connect would run, the meta rows and the installations, for
//! `cairnq migrate`, `cairnq doctor` and teams that run migrations with
//! their own tool.

use cairnq_core::{MigrationStatus, Result};

use crate::options::PostgresOptions;
use crate::probe::AppConnections;
use crate::store::PostgresStore;

impl PostgresStore {
    /// The migration ledger the connection reaches (the schema of
    /// `options`, or the DSN's search_path) beside the migrations this SDK
    /// ships: applied (with when) or pending, in file-name order, plus any
    /// the ledger holds that this SDK does not know. Reads on one
    /// connection without installing anything (no schema, ledger or table
    /// is created).
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    /// let ledger = PostgresStore::migrations("postgres://app@127.0.0.1/app", PostgresOptions::new()).await?;
    /// for pending in ledger.iter().filter(|m| !m.is_applied()) {
    ///     println!("pending: {}", pending.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn migrations(dsn: &str, options: PostgresOptions) -> Result<Vec<MigrationStatus>> {
        let client = crate::inspect::connect_once(dsn, &options).await?;
        crate::inspect::ledger(&client).await
    }

    /// The SQL that connecting a store would run on the database at `dsn`
    /// right now, as one script to run as is (`psql -v ON_ERROR_STOP=1 -f
    /// SCRIPT DSN`) for teams whose schema changes go through their own
    /// tool: with the options' schema, its search_path and its creation;
    /// the ledger when there is none (under the installation lock); each
    /// pending migration in its own transaction under `lock table
    /// cairnq_migrations in exclusive mode`, with its ledger row; and the
    /// first `ANALYZE` of a new installation. Only what the ledger lacks is
    /// in it. Reads on one connection without installing anything; refused
    /// as a connect would be: [`Error::ProtocolVersionMismatch`](cairnq_core::Error::ProtocolVersionMismatch), or
    /// [`Error::SchemaMismatch`](cairnq_core::Error::SchemaMismatch) when, without a schema, it would start a
    /// second installation.
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    /// let options = PostgresOptions::new().schema("jobs");
    /// let script = PostgresStore::migration_script("postgres://app@127.0.0.1/app", options).await?;
    /// std::fs::write("cairnq.sql", script).expect("write the script");
    /// # Ok(()) }
    /// ```
    pub async fn migration_script(dsn: &str, options: PostgresOptions) -> Result<String> {
        crate::script::migration_script(dsn, &options).await
    }

    /// Every row of the `cairnq_meta` table the connection reaches
    /// (`protocol_version`, `schema_version`, ...) as stored; empty without
    /// such a table. Reads on one connection without installing anything.
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    /// let meta = PostgresStore::meta("postgres://app@127.0.0.1/app", PostgresOptions::new()).await?;
    /// println!("protocol {:?}", meta.get("protocol_version"));
    /// # Ok(()) }
    /// ```
    pub async fn meta(dsn: &str, options: PostgresOptions) -> Result<std::collections::BTreeMap<String, String>> {
        let client = crate::inspect::connect_once(dsn, &options).await?;
        crate::inspect::meta(&client).await
    }

    /// Every schema of the database at `dsn` holding a cairnq installation
    /// (more than one splits queues between them). Reads only.
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    /// let schemas = PostgresStore::installations("postgres://app@127.0.0.1/app", PostgresOptions::new()).await?;
    /// assert!(schemas.len() <= 1, "one installation per database keeps one queue");
    /// # Ok(()) }
    /// ```
    pub async fn installations(dsn: &str, options: PostgresOptions) -> Result<Vec<String>> {
        let client = crate::inspect::connect_once(dsn, &options).await?;
        crate::migrate::installations(&client).await
    }

    /// What answers at `dsn` when it is not Postgres itself: `Some` (in
    /// words) when a connection pooler does (PgBouncer refuses, or drops,
    /// a startup setting a direct session keeps), `None` for a direct
    /// connection. `cairnq doctor` reports it; in front of a transaction
    /// pooler, connect with [`PostgresOptions::pooler`]. Reads only.
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    /// if let Some(what) = PostgresStore::pooler_in_front("postgres://app@127.0.0.1:6432/app", PostgresOptions::new()).await? {
    ///     println!("{what} answers: use pooler mode");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn pooler_in_front(dsn: &str, options: PostgresOptions) -> Result<Option<String>> {
        crate::probe::pooler_in_front(dsn, &options).await
    }

    /// The server connections the database at `dsn` has from cairnq
    /// processes (`application_name` starting `cairnq`), by name: what a
    /// fleet of workers costs the server. Through a transaction pooler a
    /// server connection carries the name of the last client it served.
    /// Reads only.
    pub async fn cairnq_connections(dsn: &str, options: PostgresOptions) -> Result<Vec<AppConnections>> {
        crate::probe::connections(dsn, &options).await
    }
}
