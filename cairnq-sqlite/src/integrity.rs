//! Whether a database file is damaged, and where; and its health beside
//! that (journal mode, file and WAL sizes) for `cairnq doctor`.
//!
//! SQLite reads only the pages a statement needs, so a file with garbage
//! over some pages still answers every query that misses them: a count
//! from the counter table, the newest page of a list. Only a check that
//! reads every page tells, and that costs a read of the whole file. So this
//! is a separate call, for operators' tools (`cairnq doctor` in full, the
//! read commands within a time budget), never part of opening a store.
//!
//! The check is `PRAGMA quick_check` (every page's structure, not whether
//! each index agrees with its table: `integrity_check` is several times
//! slower). When it finds damage, each table is checked on its own
//! (`quick_check(table)`, its indexes with it) to name the tables hit.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use cairnq_core::{Error, Result};
use rusqlite::{Connection, ErrorCode};

use crate::SqliteStore;
use crate::error::{is_damage, opening, sqlite_error};
use crate::inspect::{off_runtime, read_only};

/// The most problems kept from one check (SQLite may list thousands).
const PROBLEMS_KEPT: usize = 5;

/// What an integrity check of a database file found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Integrity {
    /// Every page checked out.
    Intact,
    /// Some pages are damaged.
    Damaged(Damage),
    /// The check ran out of its time budget first; it found nothing
    /// wrong in the part it read.
    Unfinished,
}

/// Where a database file is damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Damage {
    /// The tables (with their indexes) whose pages are damaged, by name;
    /// empty when the damage lies outside every table (free pages, the
    /// schema) or the schema itself cannot be read.
    pub tables: Vec<String>,
    /// The first problems SQLite reported, in its words.
    pub problems: Vec<String>,
}

impl std::fmt::Display for Damage {
    /// Where, and SQLite's first problem: "in cairnq_tasks: Tree 4 page
    /// 303: btreeInitPage() returns error code 11, and 4 more problems"
    /// (no parentheses: callers set it inside their own sentences).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.tables.as_slice() {
            [] => write!(f, "outside the tables")?,
            tables => write!(f, "in {}", tables.join(", "))?,
        }
        if let Some(first) = self.problems.first() {
            write!(f, ": {first}")?;
        }
        match self.problems.len() {
            0 | 1 => Ok(()),
            2 => write!(f, ", and 1 more problem"),
            n => write!(f, ", and {} more problems", n - 1),
        }
    }
}

/// What `PRAGMA quick_check` and the journal say about a database file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileHealth {
    /// `ok`, or the first problems `PRAGMA quick_check` found.
    pub integrity: String,
    /// Where the file is damaged; `None` when the check passed.
    pub damage: Option<Damage>,
    /// The journal mode (`wal` for a database cairnq opened).
    pub journal_mode: String,
    /// Size of the `-wal` file in bytes (0 when there is none): a large one
    /// means checkpoints cannot keep up, e.g. a reader that never finishes.
    pub wal_bytes: u64,
    /// The database file's size in bytes.
    pub file_bytes: u64,
}

impl FileHealth {
    /// Whether the integrity check passed.
    pub fn is_ok(&self) -> bool {
        self.integrity == "ok"
    }
}

impl Integrity {
    /// Whether the check found no damage (finished or not).
    pub fn found_nothing(&self) -> bool {
        !matches!(self, Self::Damaged(_))
    }
}

impl SqliteStore {
    /// The health of the database file at `path`: `PRAGMA quick_check`
    /// (every page read: it takes time in proportion to the file's size;
    /// see [`check_integrity`](Self::check_integrity)), with the damaged
    /// tables named, the journal mode, the sizes of the file and its
    /// `-wal`. Read-only; a missing file is [`Error::Unusable`], a damaged
    /// one a health that is not [`ok`](FileHealth::is_ok).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_sqlite::SqliteStore;
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("q.db");
    /// let store = SqliteStore::open(&path).await?;
    /// let health = SqliteStore::file_health(&path).await?;
    /// assert!(health.is_ok());
    /// assert_eq!(health.journal_mode, "wal");
    /// # Ok(()) }
    /// ```
    pub async fn file_health(path: impl AsRef<Path>) -> Result<FileHealth> {
        file_health(path.as_ref().to_path_buf()).await
    }

    /// Checks every page of the database file at `path` with `PRAGMA
    /// quick_check` on a read-only connection, naming the damaged tables
    /// when it finds damage. It reads the whole file, so it takes time in
    /// proportion to its size; with a `budget` it stops when the budget runs
    /// out and answers [`Integrity::Unfinished`]. A missing file, or one
    /// that is not a SQLite database at all, is [`Error::Unusable`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use std::time::Duration;
    /// use cairnq_sqlite::{Integrity, SqliteStore};
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("q.db");
    /// SqliteStore::open(&path).await?;
    /// let found = SqliteStore::check_integrity(&path, Some(Duration::from_secs(5))).await?;
    /// assert_eq!(found, Integrity::Intact);
    /// # Ok(()) }
    /// ```
    pub async fn check_integrity(path: impl AsRef<Path>, budget: Option<Duration>) -> Result<Integrity> {
        let path = path.as_ref().to_path_buf();
        off_runtime(move || {
            let conn = existing(&path)?;
            check(&conn, &path, budget)
        })
        .await
    }
}

/// The health of the file at `path` (see [`SqliteStore::file_health`](crate::SqliteStore::file_health)).
async fn file_health(path: PathBuf) -> Result<FileHealth> {
    off_runtime(move || {
        let conn = existing(&path)?;
        let damage = match check(&conn, &path, None)? {
            Integrity::Damaged(damage) => Some(damage),
            _ => None,
        };
        // A damaged file may not even say its journal mode.
        let journal_mode = match conn.pragma_query_value(None, "journal_mode", |row| row.get::<_, String>(0)) {
            Ok(mode) => mode,
            Err(e) if damage.is_some() => format!("unreadable ({e})"),
            Err(e) => return Err(opening(&path, sqlite_error("read the journal mode", "journal_mode", e))),
        };
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        Ok(FileHealth {
            integrity: damage.as_ref().map_or_else(|| "ok".to_string(), |d| d.problems.join("; ")),
            damage,
            journal_mode,
            wal_bytes: size(Path::new(&wal)),
            file_bytes: size(&path),
        })
    })
    .await
}

/// A read-only connection to the file, which must exist.
fn existing(path: &Path) -> Result<Connection> {
    read_only(path)?.ok_or_else(|| Error::Unusable {
        message: format!("cannot open {}: no such file", path.display()),
        source: None,
    })
}

/// The check on an open connection (see [`SqliteStore::check_integrity`]).
fn check(conn: &Connection, path: &Path, budget: Option<Duration>) -> Result<Integrity> {
    let deadline = budget.map(|budget| Deadline::start(conn, budget));
    let problems = match quick_check(conn, None) {
        Ok(problems) => problems,
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) => return Ok(Integrity::Unfinished),
        Err(e) if is_damage(&e) => vec![e.to_string()],
        Err(e) => return Err(opening(path, sqlite_error("check the file's integrity", "quick_check", e))),
    };
    if problems.is_empty() {
        return Ok(Integrity::Intact);
    }
    // The damaged tables: found without a budget, since the damage is
    // certain by now and the report is worth the wait.
    drop(deadline);
    Ok(Integrity::Damaged(Damage { tables: damaged_tables(conn), problems }))
}

/// The problems `quick_check` lists (none: the file is intact), for the
/// whole file or one table.
fn quick_check(conn: &Connection, table: Option<&str>) -> rusqlite::Result<Vec<String>> {
    let sql = match table {
        Some(table) => format!("pragma quick_check(\"{}\")", table.replace('"', "\"\"")),
        None => format!("pragma quick_check({PROBLEMS_KEPT})"),
    };
    let mut stmt = conn.prepare(&sql)?;
    let lines = stmt.query_map([], |row| row.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    // A row may hold several problems, one a line, under a heading
    // ("*** in database main ***") that names none.
    let problems = lines.iter().flat_map(|row| row.lines()).map(str::trim);
    let problems = problems.filter(|line| !line.is_empty() && *line != "ok" && !line.starts_with("*** in database"));
    Ok(problems.take(PROBLEMS_KEPT).map(String::from).collect())
}

/// The tables whose own check fails; the schema's own name when even the
/// list of tables cannot be read.
fn damaged_tables(conn: &Connection) -> Vec<String> {
    let names = conn
        .prepare("select name from sqlite_schema where type = 'table' order by name")
        .and_then(|mut s| s.query_map([], |row| row.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>());
    match names {
        Ok(names) => {
            names.into_iter().filter(|name| !matches!(quick_check(conn, Some(name)), Ok(p) if p.is_empty())).collect()
        }
        Err(_) => vec!["sqlite_schema".to_string()],
    }
}

/// Interrupts the connection's statement when the budget runs out, unless
/// dropped first (then its timer thread ends at once).
struct Deadline {
    _stop: mpsc::Sender<()>,
}

impl Deadline {
    fn start(conn: &Connection, budget: Duration) -> Self {
        let interrupt = conn.get_interrupt_handle();
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(budget) {
                interrupt.interrupt();
            }
        });
        Self { _stop: stop }
    }
}
