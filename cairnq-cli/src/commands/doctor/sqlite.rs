//! The doctor's look at a SQLite file: its integrity (every page read; a
//! damaged file is reported with the tables hit and what to do), its
//! journal mode and the size of its WAL.
//!
//! A damaged file is checked first, since everything else the doctor reads
//! from it may be partial: the rest of the report then goes as far as the
//! file still reads, and its tasks are not judged.

use std::path::Path;

use cairnq_sqlite::SqliteStore;
use serde::Serialize;

use crate::exit::Failure;

/// A WAL this large means checkpoints cannot keep up.
const LARGE_WAL: u64 = 256 * 1024 * 1024;

#[derive(Serialize)]
pub(super) struct SqliteReport {
    /// `ok`, or the first problems `PRAGMA quick_check` found.
    pub(super) integrity: String,
    /// The tables whose pages are damaged; absent when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) damaged_tables: Option<Vec<String>>,
    pub(super) journal_mode: String,
    pub(super) file_bytes: u64,
    pub(super) wal_bytes: u64,
}

impl SqliteReport {
    pub(super) fn damaged(&self) -> bool {
        self.damaged_tables.is_some()
    }
}

/// Checks the file at `path`, adding what looks wrong to `problems`.
pub(super) async fn check(path: &Path, problems: &mut Vec<String>) -> Result<SqliteReport, Failure> {
    let health = SqliteStore::file_health(path).await?;
    if let Some(damage) = &health.damage {
        problems.push(damaged(path, &damage.to_string()));
    }
    if health.journal_mode != "wal" && health.damage.is_none() {
        problems
            .push(format!("journal mode is {}, not wal: readers and the writer block each other", health.journal_mode));
    }
    if health.wal_bytes > LARGE_WAL {
        problems.push(format!(
            "the WAL holds {} MiB: checkpoints cannot keep up (a long-lived reader?)",
            health.wal_bytes >> 20
        ));
    }
    Ok(SqliteReport {
        integrity: health.integrity,
        damaged_tables: health.damage.map(|damage| damage.tables),
        journal_mode: health.journal_mode,
        file_bytes: health.file_bytes,
        wal_bytes: health.wal_bytes,
    })
}

/// The finding for a damaged file: where, and what to do. Salvaging goes
/// into a new file, checked before it replaces the damaged one, so nothing
/// is lost that a backup or a better salvage could still give.
fn damaged(path: &Path, damage: &str) -> String {
    let file = path.display();
    let salvaged = salvage_path(path);
    let salvaged = salvaged.display();
    format!(
        "the SQLite file is damaged {damage}. Reads from it may be incomplete, and its tasks were not checked. \
         Stop the workers and clients using it, then restore it from a backup, or salvage its readable rows \
         into a new file: `sqlite3 {file} .recover | sqlite3 {salvaged}` (sqlite3 3.41 or later), check that \
         with `cairnq --db {salvaged} doctor`, and put it in place of {file}"
    )
}

/// `queue.db` -> `queue-recovered.db`, beside it.
fn salvage_path(path: &Path) -> std::path::PathBuf {
    let stem = path.file_stem().map_or_else(|| "cairnq".into(), |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-recovered.{}", ext.to_string_lossy()),
        None => format!("{stem}-recovered"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_salvage_goes_beside_the_damaged_file() {
        assert_eq!(salvage_path(Path::new("/var/q/queue.db")), Path::new("/var/q/queue-recovered.db"));
        assert_eq!(salvage_path(Path::new("jobs")), Path::new("jobs-recovered"));
    }
}
