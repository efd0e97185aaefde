//! Shared helpers: fresh stores on temp files, raw read connections, and
//! spawning this test binary as a child process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use cairnq_core::CairnQ;
use cairnq_sqlite::{SqliteOptions, SqliteStore};
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

/// Spawns this test binary running `child_process_entry` in `mode`, with
/// a piped stdin (modes that wait for a go-ahead read it).
pub(crate) fn spawn_child(mode: &str, path: &Path, stdout: Stdio) -> Child {
    child_command(Command::new(std::env::current_exe().expect("current exe")), mode, path, stdout)
}

/// [`spawn_child`] as a user file permissions stop (see
/// `cairnq_testkit::unprivileged`); `None` after printing why there is
/// none.
pub(crate) fn spawn_unprivileged_child(mode: &str, path: &Path, stdout: Stdio) -> Option<Child> {
    match cairnq_testkit::unprivileged::command(&std::env::current_exe().expect("current exe")) {
        Ok(command) => Some(child_command(command, mode, path, stdout)),
        Err(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
    }
}

fn child_command(mut command: Command, mode: &str, path: &Path, stdout: Stdio) -> Child {
    command
        .args(["--ignored", "--exact", "child_process_entry", "--nocapture", "--test-threads", "1"])
        .env("CAIRNQ_SQLITE_CHILD", mode)
        .env("CAIRNQ_SQLITE_PATH", path)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}
