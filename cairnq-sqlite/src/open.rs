//! Opening a database: connection settings, the protocol check, WAL,
//! migrations and planner statistics (PROTOCOL.md "Migrations").
//!
//! Order matters: the protocol version of an existing database is checked
//! before anything is written (not even the WAL switch, which rewrites the
//! file header), so a foreign database is refused untouched.
//!
//! A database in memory has no WAL (SQLite keeps its journal in memory
//! too) and no file to diagnose; it is otherwise opened, checked, migrated
//! and analyzed like a file.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Clock, Error, Install, Result};
use cairnq_protocol::{Migration, sqlite};
use cairnq_sql::{Installed, Query, Sql, check_protocol_version};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::busy::{self, LockWaits};
use crate::error::{OPEN, is_busy, opening, sqlite_error, without_open};
use crate::location::Location;
use crate::options::SqliteOptions;
use crate::sql::{query_int, query_opt};

/// Statements (x flag combinations) a connection keeps prepared.
const STATEMENT_CACHE: usize = 96;

/// Page cache per connection, in KiB (`cache_size` takes negative KiB).
const CACHE_KIB: i64 = -16 * 1024;

/// How often a busy WAL switch is retried, and how long apart.
const WAL_RETRIES: u32 = 100;
const WAL_RETRY_PAUSE: Duration = Duration::from_millis(20);

/// The writer's connection: checked, migrated and analyzed. Its waits
/// for another process's write lock go through cairnq's busy handler and
/// are counted in `waits` (see `busy`).
pub(crate) fn open_writer(location: &Location, options: &SqliteOptions, waits: Arc<LockWaits>) -> Result<Connection> {
    let prepare = || {
        let mut conn = match location {
            Location::File(path) => connect_file(path, options)?,
            Location::Memory { uri, .. } => connect(Path::new(uri), OpenFlags::SQLITE_OPEN_URI, options)?,
        };
        busy::install(&mut conn, options.busy_timeout, waits).map_err(|e| sqlite_error(OPEN, "busy_handler", e))?;
        if options.install == Install::Existing {
            require_installation(&conn)?;
            return Ok(conn);
        }
        refuse_other_protocol(&conn)?;
        if location.file().is_some() {
            enable_wal(&conn)?;
        }
        migrate(&mut conn, options.clock.as_ref())?;
        require_protocol(&conn)?;
        analyze_once(&conn)?;
        Ok(conn)
    };
    prepare().map_err(|e| match location {
        Location::File(path) => opening(path, e),
        // Nothing on the file system to look at: the URI and SQLite's words.
        Location::Memory { uri, .. } => opening_in_memory(uri, e),
    })
}

/// A reader's connection; `query_only` makes sure it never writes.
pub(crate) fn open_reader(path: &Path, options: &SqliteOptions) -> Result<Connection> {
    let prepare = || {
        let conn = connect_file(path, options)?;
        conn.pragma_update(None, "query_only", true).map_err(|e| sqlite_error(OPEN, "query_only", e))?;
        Ok(conn)
    };
    prepare().map_err(|e| opening(path, e))
}

pub(crate) fn connect_file(path: &Path, options: &SqliteOptions) -> Result<Connection> {
    if path.is_dir() {
        // `opening` names the directory; SQLite would only say it cannot open it.
        return Err(Error::Unusable { message: "SQLite cannot open a directory".into(), source: None });
    }
    if options.install == Install::Existing && !path.exists() {
        return Err(Error::Unusable { message: "no such file (nothing was created)".into(), source: None });
    }
    connect(path, OpenFlags::empty(), options)
}

/// A connection with cairnq's settings; `extra` adds `SQLITE_OPEN_URI`
/// for a database in memory named by a URI. Only [`Install::Migrate`]
/// may create the database.
fn connect(path: &Path, extra: OpenFlags, options: &SqliteOptions) -> Result<Connection> {
    let create = match options.install {
        Install::Existing => OpenFlags::empty(),
        _ => OpenFlags::SQLITE_OPEN_CREATE,
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | create | OpenFlags::SQLITE_OPEN_NO_MUTEX | extra;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(OPEN, "open", e))?;
    conn.busy_timeout(options.busy_timeout).map_err(|e| sqlite_error(OPEN, "busy_timeout", e))?;
    conn.pragma_update(None, "foreign_keys", true).map_err(|e| sqlite_error(OPEN, "foreign_keys", e))?;
    conn.pragma_update(None, "synchronous", options.synchronous.pragma_value())
        .map_err(|e| sqlite_error(OPEN, "synchronous", e))?;
    // Savepoints and multi-row statements journal the pages they touch in
    // a temp file; in memory that costs a memcpy instead of a write call
    // (the durable journal is the WAL, untouched by this).
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(|e| sqlite_error(OPEN, "temp_store", e))?;
    // SQLite's default page cache is 2 MiB; a claim or a settle touches
    // several indexes, and a cache miss is a read call.
    conn.pragma_update(None, "cache_size", CACHE_KIB).map_err(|e| sqlite_error(OPEN, "cache_size", e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Plans from the statement's text alone. Otherwise SQLite (3.54) reads
    // a bound `limit :limit` while planning and marks the statement to be
    // compiled anew whenever that parameter is bound again: every claim
    // (its limit is the free room) re-prepared the claim UPDATE with all
    // its triggers. The plans are then the ones tests/it/plans.rs checks,
    // which it explains with the parameters unbound.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| sqlite_error(OPEN, "query planner stability", e))?;
    Ok(conn)
}

/// An error opening a database in memory, prefixed with its URI.
fn opening_in_memory(uri: &str, error: Error) -> Error {
    match error {
        Error::Storage { message, source, transient } => {
            Error::Storage { message: format!("cannot open {uri}: {}", without_open(message)), source, transient }
        }
        Error::Unusable { message, source } => {
            Error::Unusable { message: format!("cannot open {uri}: {}", without_open(message)), source }
        }
        other => other,
    }
}

/// `protocol_version` of an installed database, `None` before the first
/// migration created `cairnq_meta` (or when the row is missing).
fn protocol_version(conn: &Connection) -> Result<Option<String>> {
    if query_int(conn, &Query::new(Sql::TableExists).arg("table", "cairnq_meta"))? == 0 {
        return Ok(None);
    }
    query_opt(conn, &Query::new(Sql::ReadMeta).arg("key", "protocol_version"), crate::row::first_text)
}

fn refuse_other_protocol(conn: &Connection) -> Result<()> {
    check_protocol_version(protocol_version(conn)?.as_deref(), Installed::NotYet)
}

/// [`Install::Existing`]: the cairnq tables must be there already, in this
/// SDK's protocol version; nothing is written to find out.
fn require_installation(conn: &Connection) -> Result<()> {
    if query_int(conn, &Query::new(Sql::TableExists).arg("table", "cairnq_tasks"))? == 0 {
        return Err(Error::Unusable {
            message: "not a cairnq database: it has no cairnq_tasks table (nothing was changed)".into(),
            source: None,
        });
    }
    require_protocol(conn)
}

fn require_protocol(conn: &Connection) -> Result<()> {
    check_protocol_version(protocol_version(conn)?.as_deref(), Installed::Done)
}

/// The first opener switches the file to WAL; a switch that collides with
/// another process's transaction is retried briefly.
fn enable_wal(conn: &Connection) -> Result<()> {
    let mut attempt = 0;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "wal", |row| row.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(Error::Storage {
                    message: format!("cannot switch to WAL journal mode (it stays {mode})"),
                    source: None,
                    transient: false,
                });
            }
            Err(e) if is_busy(&e) && attempt < WAL_RETRIES => attempt += 1,
            Err(e) => return Err(sqlite_error("switch the database to WAL journal mode", "journal_mode = wal", e)),
        }
        std::thread::sleep(WAL_RETRY_PAUSE);
    }
}

/// Creates the ledger, then applies each missing migration in its own
/// `BEGIN IMMEDIATE` transaction that re-checks the ledger first, so
/// processes starting together never apply one twice.
fn migrate(conn: &mut Connection, clock: &dyn Clock) -> Result<()> {
    query_int(conn, &Query::new(Sql::CreateMigrationLedger))?;
    for migration in sqlite::MIGRATIONS {
        // Fast path: a migrated database takes no write lock at all.
        if !is_applied(conn, migration)? {
            apply_once(conn, migration, clock)?;
        }
    }
    Ok(())
}

fn is_applied(conn: &Connection, migration: &Migration) -> Result<bool> {
    Ok(query_int(conn, &Query::new(Sql::MigrationApplied).arg("name", migration.file_name))? != 0)
}

fn apply_once(conn: &mut Connection, migration: &Migration, clock: &dyn Clock) -> Result<()> {
    let doing = format!("apply migration {}", migration.file_name);
    let context = |what: &'static str| {
        let doing = &doing;
        move |e| sqlite_error(doing, &format!("{what} {}", migration.file_name), e)
    };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(context("begin"))?;
    if !is_applied(&tx, migration)? {
        tx.execute_batch(migration.sql).map_err(context("apply"))?;
        let record = Query::new(Sql::RecordMigration).arg("name", migration.file_name).arg("now_ms", clock.now_ms());
        query_int(&tx, &record)?;
    }
    tx.commit().map_err(context("commit"))
}

/// A table never analyzed gets `ANALYZE cairnq_tasks` once. ANALYZE of an
/// empty table records nothing, so an empty database is analyzed again at
/// the next open (cheap: there is nothing to read).
fn analyze_once(conn: &Connection) -> Result<()> {
    let has_stats = query_int(conn, &Query::new(Sql::TableExists).arg("table", "sqlite_stat1"))? != 0
        && query_int(conn, &Query::new(Sql::TasksAnalyzed))? != 0;
    if !has_stats {
        query_int(conn, &Query::new(Sql::AnalyzeTasks))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;
    use crate::sql::query;

    /// A claim binds a new `limit` every time; the statement (an UPDATE
    /// compiled with every trigger on the task table) must not be compiled
    /// again for it.
    #[test]
    fn a_new_limit_does_not_recompile_the_claim() {
        let dir = tempfile::tempdir().expect("temp dir");
        let location = Location::File(dir.path().join("q.db"));
        let conn = open_writer(&location, &SqliteOptions::default(), Arc::default()).expect("open");
        let claim = |limit: i64| {
            let q = Query::new(Sql::ClaimDueTasks)
                .arg("worker_id", "w")
                .arg("lease_ms", 1_000)
                .arg("now_ms", 0)
                .arg("queue", "default")
                .arg("limit", limit)
                .flag("one_queue");
            query(&conn, &q, |_| Ok(())).expect("claim");
            q
        };
        for limit in [1, 7, 2, 64] {
            claim(limit);
        }
        let rendered = sqlite::statement(Sql::ClaimDueTasks).rendering(&["one_queue"]).expect("rendering").sql;
        let stmt = conn.prepare_cached(rendered).expect("cached");
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0, "the claim was compiled again for a new limit");
    }
}
