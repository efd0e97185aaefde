//! Looking at a database file without opening a store on it: the migration
//! ledger, the meta rows and the file's health, for operators' tools
//! (`cairnq migrate status`, `cairnq doctor`). A store's open migrates; these only read,
//! on a read-only connection, and never create the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairnq_core::{Error, MigrationStatus, Result};
use cairnq_protocol::sqlite;
use cairnq_sql::{Query, Sql, purpose};
use rusqlite::{Connection, OpenFlags};

use crate::SqliteStore;
use crate::error::{OPEN, opening, sqlite_error};
use crate::location::Location;
use crate::row::first_text;
use crate::sql::{query, query_int};

/// Looking at a file without opening a store on it: the ledger and the meta
/// rows (the file's health is `integrity`'s, the script opening would run
/// `script`'s).
impl SqliteStore {
    /// The migration ledger of the database file at `path` beside the
    /// migrations this SDK ships: applied (with when) or pending, in
    /// file-name order, plus any the ledger holds that this SDK does not
    /// know. Reads on a read-only connection without opening a store: it
    /// migrates nothing and creates no file (a missing file has every
    /// migration pending).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::Store;
    /// use cairnq_sqlite::SqliteStore;
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("q.db");
    /// assert!(SqliteStore::migrations(&path).await?.iter().all(|m| !m.is_applied()));
    /// assert!(!path.exists(), "looking created nothing");
    /// SqliteStore::open(&path).await?.close().await?;
    /// assert!(SqliteStore::migrations(&path).await?.iter().all(|m| m.is_applied()));
    /// # Ok(()) }
    /// ```
    pub async fn migrations(path: impl AsRef<Path>) -> Result<Vec<MigrationStatus>> {
        migrations(path.as_ref().to_path_buf()).await
    }

    /// Every row of the database's `cairnq_meta` table (`protocol_version`,
    /// `schema_version`, ...) as stored, read without opening a store;
    /// empty when there is no file or no such table.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::Store;
    /// use cairnq_sqlite::SqliteStore;
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("q.db");
    /// SqliteStore::open(&path).await?.close().await?;
    /// let meta = SqliteStore::meta(&path).await?;
    /// assert_eq!(meta.get("protocol_version").map(String::as_str), Some("1"));
    /// # Ok(()) }
    /// ```
    pub async fn meta(path: impl AsRef<Path>) -> Result<BTreeMap<String, String>> {
        meta(path.as_ref().to_path_buf()).await
    }
}

/// Every migration this SDK ships and every one the ledger at `path`
/// records, in file-name order (see [`SqliteStore::migrations`](crate::SqliteStore::migrations)).
pub(crate) async fn migrations(path: PathBuf) -> Result<Vec<MigrationStatus>> {
    off_runtime(move || {
        let shipped: Vec<_> = sqlite::MIGRATIONS.iter().map(|m| (m.file_name, m.sql)).collect();
        let ledger = match read_only(&path)? {
            Some(conn) => ledger(&conn, &path)?.unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(MigrationStatus::merge(ledger, &shipped))
    })
    .await
}

/// The ledger's entries (name, applied_at_ms); `None` when there is no
/// ledger table.
pub(crate) fn ledger(conn: &Connection, path: &Path) -> Result<Option<Vec<(String, i64)>>> {
    if !table_exists(conn, path, "cairnq_migrations")? {
        return Ok(None);
    }
    let entries = query(conn, &Query::new(Sql::ReadMigrationLedger), |row| {
        let name = first_text(row)?;
        let at = row.get::<_, i64>(1).map_err(|e| sqlite_error(purpose(Sql::ReadMigrationLedger), "read ledger", e))?;
        Ok((name, at))
    })?;
    Ok(Some(entries))
}

/// Every row of `cairnq_meta` at `path` (see [`SqliteStore::meta`](crate::SqliteStore::meta)).
pub(crate) async fn meta(path: PathBuf) -> Result<BTreeMap<String, String>> {
    off_runtime(move || {
        let Some(conn) = read_only(&path)? else { return Ok(BTreeMap::new()) };
        meta_rows(&conn, &path)
    })
    .await
}

/// Every row of `cairnq_meta`; none when there is no such table.
pub(crate) fn meta_rows(conn: &Connection, path: &Path) -> Result<BTreeMap<String, String>> {
    if !table_exists(conn, path, "cairnq_meta")? {
        return Ok(BTreeMap::new());
    }
    let rows = query(conn, &Query::new(Sql::ReadAllMeta), |row| {
        let key = first_text(row)?;
        let value = row.get::<_, String>(1).map_err(|e| sqlite_error(purpose(Sql::ReadAllMeta), "read meta", e))?;
        Ok((key, value))
    })?;
    Ok(rows.into_iter().collect())
}

/// Whether the database holds `table`.
pub(crate) fn table_exists(conn: &Connection, path: &Path, table: &'static str) -> Result<bool> {
    let exists = query_int(conn, &Query::new(Sql::TableExists).arg("table", table)).map_err(|e| opening(path, e))?;
    Ok(exists != 0)
}

/// A read-only connection to the file at `path`; `None` when there is no
/// such file (nothing is created). A database in memory is refused: no
/// other connection can see it.
pub(crate) fn read_only(path: &Path) -> Result<Option<Connection>> {
    let file = match Location::parse(path)? {
        Location::File(file) => file,
        Location::Memory { .. } => {
            return Err(Error::validation("path", "a database in memory cannot be inspected from outside"));
        }
    };
    if !file.exists() {
        return Ok(None);
    }
    if file.is_dir() {
        return Err(opening(&file, Error::Unusable { message: "SQLite cannot open a directory".into(), source: None }));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&file, flags).map_err(|e| opening(&file, sqlite_error(OPEN, "open", e)))?;
    Ok(Some(conn))
}

/// Runs blocking SQLite work on the blocking pool, not the async runtime.
pub(crate) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::storage("a SQLite inspection thread failed", e))?
}
