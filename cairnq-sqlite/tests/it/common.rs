//! Shared helpers: fresh stores on temp files, raw read connections, and
//! the child process's arguments for a file.

use std::path::{Path, PathBuf};

use cairnq_core::CairnQ;
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use cairnq_testkit::StoreLocator;
use cairnq_testkit::child::{ChildArgs, ChildMode};
use rusqlite::{Connection, OpenFlags};
use tempfile::TempDir;

/// A temp dir holding `queue.db`; the dir lives as long as the bundle.
pub(crate) struct Fresh {
    pub(crate) dir: TempDir,
    pub(crate) path: PathBuf,
}

pub(crate) fn fresh_path() -> Fresh {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("queue.db");
    Fresh { dir, path }
}

pub(crate) async fn open_store(path: &Path) -> SqliteStore {
    SqliteStore::open(path).await.expect("open store")
}

pub(crate) async fn open_client(path: &Path) -> CairnQ {
    CairnQ::new(SqliteStore::open_with(path, SqliteOptions::new()).await.expect("open store"))
}

/// A read-only raw connection for assertions on the file itself.
pub(crate) fn raw(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("raw connection")
}

pub(crate) fn count(path: &Path, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |r| r.get(0)).expect("count query")
}

/// The testkit's child process on the database at `path`.
pub(crate) fn child_args(path: &Path, mode: ChildMode) -> ChildArgs {
    ChildArgs::new(StoreLocator::Sqlite { path: path.to_path_buf() }, mode)
}
