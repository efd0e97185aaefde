//! Which database a command talks to (`--db` / `CAIRNQ_DB`, `--schema`,
//! and on Postgres `--pooler` / `--listen-url`),
//! and opening it: read-only commands never create or migrate a database
//! ([`Install::Existing`]); only `submit`, `worker` and `migrate` may, as an
//! application would. Reads that sum up the queue also refuse a damaged
//! SQLite file ([`Target::refuse_damaged`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use cairnq_core::{CairnQ, Install, MigrationStatus};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_sqlite::{Integrity, SqliteOptions, SqliteStore};

use crate::exit::{Exit, Failure};

/// How long `stats` and `list` spend checking a SQLite file for damage
/// before they answer: a whole check of a file of a hundred MB or so on
/// ordinary disks; a larger file is checked only by `doctor`.
pub(crate) const DAMAGE_CHECK_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// Where the queue lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A SQLite file (a path, or a `sqlite:` URL).
    Sqlite(PathBuf),
    /// A Postgres database (`postgres://` or `postgresql://` URL), in a
    /// schema when one was given.
    Postgres { dsn: String, schema: Option<String>, connect: PgConnect },
}

/// How a Postgres target connects besides its DSN and schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PgConnect {
    /// `--pooler` / `CAIRNQ_PG_POOLER`: through a transaction-mode pooler.
    pub(crate) pooler: bool,
    /// `--listen-url` / `CAIRNQ_PG_LISTEN_URL`: where LISTEN connects.
    pub(crate) listen_url: Option<String>,
    /// What the connections report as `application_name`
    /// (`cairnq-rs <command>`), so `doctor` can tell them apart.
    pub(crate) application_name: String,
}

/// How many connections a command's store may hold: a command runs few
/// statements at once, and a worker's claims and settles are batched, so
/// N worker processes need about N x (this + 1 for LISTEN) server
/// connections whatever their concurrency.
pub(crate) const POOL_SIZE: usize = 4;

impl Target {
    /// Reads `--db`, `--schema`, `--pooler` and `--listen-url`. A path (or
    /// `sqlite:PATH`, `sqlite://PATH`) means SQLite; a `postgres://` URL
    /// means Postgres.
    pub(crate) fn parse(db: Option<&str>, schema: Option<&str>, connect: &PgConnect) -> Result<Self, Failure> {
        let db = db.map(str::trim).filter(|db| !db.is_empty()).ok_or_else(|| {
            Failure::usage(
                "no database given: pass --db PATH_OR_URL or set CAIRNQ_DB (a SQLite path or postgres:// URL)",
            )
        })?;
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            let (dsn, schema) = (db.to_string(), schema.map(str::to_string));
            return Ok(Self::Postgres { dsn, schema, connect: connect.clone() });
        }
        if let Some(schema) = schema {
            return Err(Failure::usage(format!("--schema {schema} applies to Postgres only; {db} is a SQLite file")));
        }
        if connect.pooler || connect.listen_url.is_some() {
            let flag = if connect.pooler { "--pooler" } else { "--listen-url" };
            return Err(Failure::usage(format!("{flag} applies to Postgres only; {db} is a SQLite file")));
        }
        let path = db.strip_prefix("sqlite://").or_else(|| db.strip_prefix("sqlite:")).unwrap_or(db);
        if path.is_empty() || path.contains("://") {
            return Err(Failure::usage(format!("{db} is neither a SQLite path nor a postgres:// URL")));
        }
        Ok(Self::Sqlite(PathBuf::from(path)))
    }

    /// A client on the database. With [`Install::Existing`] a missing
    /// database, or one without cairnq tables, is refused untouched.
    pub(crate) async fn open(&self, install: Install) -> Result<CairnQ, Failure> {
        match self {
            Self::Sqlite(path) => {
                let options = SqliteOptions::new().install(install);
                Ok(CairnQ::new(SqliteStore::open_with(path, options).await?))
            }
            Self::Postgres { dsn, .. } => {
                let options = self.postgres_options().install(install).pool_size(POOL_SIZE);
                Ok(CairnQ::new(PostgresStore::connect_with(dsn, options).await?))
            }
        }
    }

    /// Refuses a SQLite file the integrity check finds damaged, checking
    /// for at most [`DAMAGE_CHECK_BUDGET`]: a read that sums up the queue
    /// (`stats`, `list`) would otherwise answer from the pages it can still
    /// read, without a word. A file too large to check within the budget
    /// passes unchecked (`doctor` checks it whole). Postgres keeps its own
    /// checksums and is not checked here.
    pub(crate) async fn refuse_damaged(&self) -> Result<(), Failure> {
        let Self::Sqlite(path) = self else { return Ok(()) };
        match SqliteStore::check_integrity(path, Some(DAMAGE_CHECK_BUDGET)).await? {
            Integrity::Damaged(damage) => Err(Failure::new(
                Exit::Failed,
                format!(
                    "the SQLite file {} is damaged {damage}. Its counts and lists would be incomplete; \
                     `cairnq doctor` says what to do",
                    path.display()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The ledger beside this SDK's migrations, read without installing.
    pub(crate) async fn migrations(&self) -> Result<Vec<MigrationStatus>, Failure> {
        Ok(match self {
            Self::Sqlite(path) => SqliteStore::migrations(path).await?,
            Self::Postgres { dsn, .. } => PostgresStore::migrations(dsn, self.postgres_options()).await?,
        })
    }

    /// What opening would run now, as one script to run as is.
    pub(crate) async fn migration_script(&self) -> Result<String, Failure> {
        Ok(match self {
            Self::Sqlite(path) => SqliteStore::migration_script(path).await?,
            Self::Postgres { dsn, .. } => PostgresStore::migration_script(dsn, self.postgres_options()).await?,
        })
    }

    /// The database's `cairnq_meta` rows, read without installing.
    pub(crate) async fn meta(&self) -> Result<BTreeMap<String, String>, Failure> {
        Ok(match self {
            Self::Sqlite(path) => SqliteStore::meta(path).await?,
            Self::Postgres { dsn, .. } => PostgresStore::meta(dsn, self.postgres_options()).await?,
        })
    }

    /// Postgres connection options for this target (schema, pooler mode,
    /// the LISTEN URL, the application name).
    pub(crate) fn postgres_options(&self) -> PostgresOptions {
        let Self::Postgres { schema, connect, .. } = self else { return PostgresOptions::new() };
        let mut options = PostgresOptions::new().pooler(connect.pooler);
        if !connect.application_name.is_empty() {
            options = options.application_name(&connect.application_name);
        }
        if let Some(schema) = schema {
            options = options.schema(schema);
        }
        if let Some(url) = &connect.listen_url {
            options = options.listen_dsn(url);
        }
        options
    }

    /// The backend's name, for messages.
    pub(crate) fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres { .. } => "postgres",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls_pick_the_backend() {
        let none = PgConnect::default();
        assert_eq!(Target::parse(Some("q.db"), None, &none).ok(), Some(Target::Sqlite("q.db".into())));
        let url = Target::parse(Some("sqlite:///tmp/q.db"), None, &none).ok();
        assert_eq!(url, Some(Target::Sqlite("/tmp/q.db".into())));
        assert_eq!(Target::parse(Some("sqlite:q.db"), None, &none).ok(), Some(Target::Sqlite("q.db".into())));
        let pooled = PgConnect { pooler: true, ..PgConnect::default() };
        let pg = Target::parse(Some("postgres://u@h/db"), Some("jobs"), &pooled).ok();
        let dsn = "postgres://u@h/db".to_string();
        assert_eq!(pg, Some(Target::Postgres { dsn, schema: Some("jobs".into()), connect: pooled }));
    }

    #[test]
    fn a_missing_database_or_postgres_flags_for_sqlite_are_a_usage_error() {
        let none = PgConnect::default();
        assert!(Target::parse(None, None, &none).is_err());
        assert!(Target::parse(Some("  "), None, &none).is_err());
        assert!(Target::parse(Some("q.db"), Some("jobs"), &none).is_err());
        assert!(Target::parse(Some("mysql://h/db"), None, &none).is_err());
        let pooled = PgConnect { pooler: true, ..PgConnect::default() };
        assert!(Target::parse(Some("q.db"), None, &pooled).is_err());
    }
}
