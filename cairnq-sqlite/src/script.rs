//! The migration script for teams whose schema changes go through their
//! own tool (`cairnq migrate sql`): what opening a store would do to the
//! file at a path, written out as SQL to run as is, for the database as it
//! is now (only the migrations its ledger lacks).
//!
//! It does what [`open`](crate::open) does, in the same order: the WAL
//! switch (outside any transaction, where SQLite allows it), the ledger
//! when there is none, then each pending migration in its own `BEGIN
//! IMMEDIATE` transaction together with its ledger row, and `ANALYZE` once
//! for a database that had no tables yet. The ledger row comes first in
//! its transaction: a migration recorded meanwhile (another process opened
//! the database) fails the insert, so with `-bail` nothing is applied twice.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairnq_core::{Error, Result};
use cairnq_protocol::{Dialect, sqlite};
use cairnq_sql::{Installed, Sql, check_protocol_version};

use crate::SqliteStore;
use crate::inspect::{ledger, meta_rows, off_runtime, read_only, table_exists};

/// What the script depends on, read from the file (all absent when there
/// is no file yet).
#[derive(Default)]
struct Found {
    ledger: Option<Vec<(String, i64)>>,
    tasks_table: bool,
}

impl SqliteStore {
    /// The SQL that opening a store would run on the file at `path` right
    /// now, as one script to run as is (`sqlite3 -bail FILE < SCRIPT`) for
    /// teams whose schema changes go through their own tool: the WAL
    /// switch, the ledger when there is none, each pending migration in
    /// its own `BEGIN IMMEDIATE` transaction with its ledger row, and the
    /// first `ANALYZE` of a new database. Only what the ledger lacks is in
    /// it. Reads only (nothing is created); a database of another protocol
    /// version is refused with [`Error::ProtocolVersionMismatch`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::Store;
    /// use cairnq_sqlite::SqliteStore;
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("q.db");
    /// let script = SqliteStore::migration_script(&path).await?;
    /// assert!(script.contains("-- migration: 0001_init.sql") && !path.exists());
    /// SqliteStore::open(&path).await?.close().await?;
    /// assert!(!SqliteStore::migration_script(&path).await?.contains("-- migration:"));
    /// # Ok(()) }
    /// ```
    pub async fn migration_script(path: impl AsRef<Path>) -> Result<String> {
        migration_script(path.as_ref().to_path_buf()).await
    }
}

/// The script for the file at `path` (see [`SqliteStore::migration_script`](crate::SqliteStore::migration_script)).
pub(crate) async fn migration_script(path: PathBuf) -> Result<String> {
    off_runtime(move || {
        let found = match read_only(&path)? {
            None => Found::default(),
            Some(conn) => {
                // A database of another protocol version is refused, as its open would.
                let meta = meta_rows(&conn, &path)?;
                check_protocol_version(meta.get("protocol_version").map(String::as_str), Installed::NotYet)?;
                Found { ledger: ledger(&conn, &path)?, tasks_table: table_exists(&conn, &path, "cairnq_tasks")? }
            }
        };
        render(&found)
    })
    .await
}

fn render(found: &Found) -> Result<String> {
    let applied = |file_name: &str| found.ledger.iter().flatten().any(|(name, _)| name == file_name);
    let pending = Dialect::Sqlite.script_steps(applied).map_err(|e| Error::storage("render the ledger rows", e))?;
    if pending.is_empty() {
        return Ok("-- cairnq: no pending migration; the database is up to date.\n".to_string());
    }
    let mut script = format!(
        "-- cairnq: {} pending migration(s) for SQLite, in order, as opening the database would apply them:\n\
         -- each in one transaction with its row in the ledger (cairnq_migrations), recorded first, so a\n\
         -- migration applied meanwhile fails its insert instead of applying twice. Run the script as is\n\
         -- and stop at the first error, e.g. `sqlite3 -bail queue.db < cairnq.sql`. The journal switch\n\
         -- cannot run inside a transaction: keep it outside one.\n\
         pragma journal_mode = wal;\n",
        pending.len()
    );
    if found.ledger.is_none() {
        writeln!(script, "{};", text(Sql::CreateMigrationLedger)).ok();
    }
    for step in &pending {
        let (name, record, body) = (step.file_name, &step.record, &step.body);
        writeln!(script, "\n-- migration: {name}\nbegin immediate;\n{record};\n{body}\ncommit;").ok();
    }
    if !found.tasks_table {
        // A new database gets its planner statistics once, as a store's open gives them.
        writeln!(script, "\n{};", text(Sql::AnalyzeTasks)).ok();
    }
    Ok(script)
}

/// A statement without parameters, as written.
fn text(sql: Sql) -> &'static str {
    sqlite::statement(sql).base().sql
}

#[cfg(test)]
mod tests {
    use cairnq_protocol::MigrationKind;

    use super::*;

    #[test]
    fn only_what_the_ledger_lacks_is_printed() {
        let fresh = render(&Found::default()).expect("render");
        assert!(fresh.contains("create table if not exists cairnq_migrations") && fresh.contains("analyze"));
        assert_eq!(fresh.matches("begin immediate;").count(), sqlite::MIGRATIONS.len());

        let shared: Vec<_> = sqlite::MIGRATIONS
            .iter()
            .filter(|m| m.kind == MigrationKind::Shared)
            .map(|m| (m.file_name.into(), 1))
            .collect();
        let partly = render(&Found { ledger: Some(shared), tasks_table: true }).expect("render");
        assert!(!partly.contains("create table if not exists cairnq_migrations") && !partly.contains("analyze"));
        assert!(!partly.contains("-- migration: 0001_init.sql") && partly.contains("-- migration: ext_0001"));
        assert!(partly.contains("values ('ext_0001_schedules.sql', cast("), "{partly}");
    }
}
