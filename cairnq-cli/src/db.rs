//! Which database a command talks to (`--db` / `CAIRNQ_DB`, `--schema`),
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
    Postgres { dsn: String, schema: Option<String> },
}

impl Target {
    /// Reads `--db` and `--schema`. A path (or `sqlite:PATH`,
    /// `sqlite://PATH`) means SQLite; a `postgres://` URL means Postgres.
    pub(crate) fn parse(db: Option<&str>, schema: Option<&str>) -> Result<Self, Failure> {
        let db = db.map(str::trim).filter(|db| !db.is_empty()).ok_or_else(|| {
            Failure::usage(
                "no database given: pass --db PATH_OR_URL or set CAIRNQ_DB (a SQLite path or postgres:// URL)",
            )
        })?;
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            return Ok(Self::Postgres { dsn: db.to_string(), schema: schema.map(str::to_string) });
        }
        if let Some(schema) = schema {
            return Err(Failure::usage(format!("--schema {schema} applies to Postgres only; {db} is a SQLite file")));
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
                let options = self.postgres_options().install(install).pool_size(4);
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

    /// Postgres connection options for this target (schema, if any).
    pub(crate) fn postgres_options(&self) -> PostgresOptions {
        match self {
            Self::Postgres { schema: Some(schema), .. } => PostgresOptions::new().schema(schema),
            _ => PostgresOptions::new(),
        }
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
        assert_eq!(Target::parse(Some("q.db"), None).ok(), Some(Target::Sqlite("q.db".into())));
        assert_eq!(Target::parse(Some("sqlite:///tmp/q.db"), None).ok(), Some(Target::Sqlite("/tmp/q.db".into())));
        assert_eq!(Target::parse(Some("sqlite:q.db"), None).ok(), Some(Target::Sqlite("q.db".into())));
        let pg = Target::parse(Some("postgres://u@h/db"), Some("jobs")).ok();
        assert_eq!(pg, Some(Target::Postgres { dsn: "postgres://u@h/db".into(), schema: Some("jobs".into()) }));
    }

    #[test]
    fn a_missing_database_or_a_schema_for_sqlite_is_a_usage_error() {
        assert!(Target::parse(None, None).is_err());
        assert!(Target::parse(Some("  "), None).is_err());
        assert!(Target::parse(Some("q.db"), Some("jobs")).is_err());
        assert!(Target::parse(Some("mysql://h/db"), None).is_err());
    }
}
