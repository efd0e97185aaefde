//! Opening: foreign protocol versions, bad paths, cold starts.

use std::time::Duration;

use cairnq_core::ErrorKind;
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::child::{ChildMode, ChildProcess, child_binary};
use cairnq_testkit::unprivileged::set_mode;

use crate::common::{child_args, count, fresh_path, open_store, raw};

/// Far longer than a child process takes to open a file.
const CHILD_PATIENCE: Duration = Duration::from_secs(120);

/// Everything a test can observe of a file: its bytes.
fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).expect("read database file")
}

#[tokio::test]
async fn open_refuses_protocol_version_2_and_writes_nothing() {
    let fresh = fresh_path();
    {
        let conn = rusqlite::Connection::open(&fresh.path).expect("create");
        conn.execute_batch(
            "create table cairnq_meta (key text primary key, value text not null);
             insert into cairnq_meta values ('protocol_version', '2'), ('schema_version', '99');",
        )
        .expect("seed a protocol 2 database");
    }
    let before = file_bytes(&fresh.path);

    let err = SqliteStore::open(&fresh.path).await.expect_err("protocol 2 must be refused");

    assert_eq!(err.kind(), ErrorKind::ProtocolVersionMismatch, "{err}");
    assert!(err.to_string().contains('2'), "{err}");
    assert_eq!(file_bytes(&fresh.path), before, "the database file changed");
    let names: Vec<String> = raw(&fresh.path)
        .prepare("select name from sqlite_master order by name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("list tables");
    assert_eq!(names, ["cairnq_meta", "sqlite_autoindex_cairnq_meta_1"], "no ledger or task table was created");
    assert!(!fresh.dir.path().join("queue.db-wal").exists(), "not switched to WAL");
}

#[tokio::test]
async fn open_a_directory_is_a_storage_error_naming_the_path() {
    let fresh = fresh_path();
    let err = SqliteStore::open(fresh.dir.path()).await.expect_err("a directory is not a database");
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(err.to_string().contains(&fresh.dir.path().display().to_string()), "{err}");
}

#[tokio::test]
async fn open_a_file_that_is_not_sqlite_is_a_storage_error_naming_the_path() {
    let fresh = fresh_path();
    std::fs::write(&fresh.path, "this is a text file, not a database\n".repeat(200)).expect("write junk");
    let before = file_bytes(&fresh.path);

    let err = SqliteStore::open(&fresh.path).await.expect_err("junk is not a database");

    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    assert!(err.to_string().contains(&fresh.path.display().to_string()), "{err}");
    assert_eq!(file_bytes(&fresh.path), before, "the junk file changed");
}

/// What `SqliteStore::open` says in a child process that file permissions
/// stop: `Ok(())` when it opened, else the error's text. `None`: skipped
/// (after printing why).
async fn open_as_unprivileged(path: &std::path::Path) -> Option<Result<(), String>> {
    let mut child = ChildProcess::spawn_unprivileged(&child_args(path, ChildMode::Open)).expect("start the child")?;
    let status = child.wait(CHILD_PATIENCE).await.expect("the child ends");
    let lines = child.rest().await;
    assert!(status.success(), "the child failed: {lines:?}");
    if lines.iter().any(|line| line == "opened") {
        return Some(Ok(()));
    }
    let error = lines.iter().find_map(|line| line.strip_prefix("open_error "));
    Some(Err(error.unwrap_or_else(|| panic!("the child reported nothing: {lines:?}")).to_string()))
}

/// The brief of an unusable directory: a database SQLite cannot open in WAL
/// mode because it cannot create `-wal` and `-shm` beside it, and a new
/// database it cannot create. The message names the directory and what
/// SQLite needs there, not the internal step that failed.
#[tokio::test]
async fn an_unwritable_directory_is_named_as_the_cause() {
    let fresh = fresh_path();
    let store = open_store(&fresh.path).await;
    cairnq_core::Store::close(&store).await.expect("close");
    assert!(!fresh.dir.path().join("queue.db-wal").exists(), "closed cleanly: no -wal left");
    set_mode(&fresh.path, 0o666).expect("the file writable by anyone");
    set_mode(fresh.dir.path(), 0o555).expect("the directory read-only");
    let before = file_bytes(&fresh.path);

    let existing = open_as_unprivileged(&fresh.path).await;
    let new = open_as_unprivileged(&fresh.dir.path().join("new.db")).await;
    set_mode(fresh.dir.path(), 0o755).expect("restore the directory");
    let (Some(existing), Some(new)) = (existing, new) else { return };
    eprintln!("opening as an unprivileged user: {existing:?} / {new:?}");

    let dir = fresh.dir.path().display().to_string();
    let error = existing.expect_err("no -wal can be created");
    let cause = format!(
        "cannot open {dir}/queue.db: the directory {dir} holding queue.db is not writable: \
         SQLite needs to create queue.db-wal and queue.db-shm there ("
    );
    assert!(error.starts_with(&format!("unusable database: {cause}")), "{error}");
    let error = new.expect_err("the file cannot be created");
    let cause =
        format!("cannot open {dir}/new.db: the directory {dir} is not writable: SQLite needs to create new.db there");
    assert!(error.starts_with(&format!("unusable database: {cause}")), "{error}");
    assert_eq!(file_bytes(&fresh.path), before, "the database file changed");
}

/// A file someone else may not write opens read-only (reads work), and a
/// write fails with an unusable error that names the file. Run here in
/// process as the owner of a 0444 file when not root; as root the worker
/// tests (cairnq-worker `tests/unusable.rs`) show it from a child.
#[tokio::test]
async fn a_read_only_file_fails_writes_naming_the_file() {
    if cairnq_testkit::unprivileged::is_root() {
        eprintln!("skipped in process as root (permissions do not stop root); see cairnq-worker tests/unusable.rs");
        return;
    }
    let fresh = fresh_path();
    let client = crate::common::open_client(&fresh.path).await;
    client.submit("job", &serde_json::json!({})).await.expect("submit");
    client.close().await.expect("close");
    crate::common::open_client(&fresh.path).await.close().await.expect("analyzed with a row");
    set_mode(&fresh.path, 0o444).expect("chmod");
    let client = crate::common::open_client(&fresh.path).await;
    assert_eq!(client.list(&cairnq_core::ListFilter::new()).await.expect("reads work").tasks.len(), 1);
    let err = client.submit("job", &serde_json::json!({})).await.expect_err("read-only");
    assert!(err.is_unusable(), "{err}");
    assert!(err.to_string().contains("queue.db is not writable by this process"), "{err}");
}

#[tokio::test]
async fn open_migrates_to_the_newest_schema_and_reopens_without_reapplying() {
    let fresh = fresh_path();
    let store = open_store(&fresh.path).await;
    cairnq_core::Store::close(&store).await.expect("close");
    let store = open_store(&fresh.path).await;
    cairnq_core::Store::close(&store).await.expect("close");

    let conn = raw(&fresh.path);
    let journal: String = conn.query_row("pragma journal_mode", [], |r| r.get(0)).expect("journal mode");
    assert_eq!(journal, "wal");
    let meta = |key: &str| -> String {
        conn.query_row("select value from cairnq_meta where key = ?1", [key], |r| r.get(0)).expect("meta row")
    };
    assert_eq!(meta("protocol_version"), "1");
    assert_eq!(meta("schema_version"), "10");
    let ledger: Vec<String> = conn
        .prepare("select name from cairnq_migrations order by name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("ledger");
    let expected: Vec<&str> = cairnq_protocol::sqlite::MIGRATIONS.iter().map(|m| m.file_name).collect();
    assert_eq!(ledger, expected);
    let analyzed = "select count(*) from sqlite_master where name = 'sqlite_stat1'";
    assert_eq!(count(&fresh.path, analyzed), 1, "ANALYZE ran on the new database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_cold_starting_on_one_new_file_all_open_it_and_apply_each_migration_once() {
    let fresh = fresh_path();
    let args = child_args(&fresh.path, ChildMode::Open);
    // Built before the first start, so the eight start together.
    child_binary().expect("the child binary");
    let mut children: Vec<_> = (0..8).map(|_| ChildProcess::spawn(&args).expect("start a child")).collect();
    for child in &mut children {
        let status = child.wait(CHILD_PATIENCE).await.expect("the child ends");
        let lines = child.rest().await;
        assert!(status.success(), "a child failed: {lines:?}");
        assert!(lines.iter().any(|line| line == "opened"), "a child did not open the file: {lines:?}");
    }
    let migrations = cairnq_protocol::sqlite::MIGRATIONS;
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_migrations"), migrations.len() as i64);
    for m in migrations {
        let sql = format!("select count(*) from cairnq_migrations where name = '{}'", m.file_name);
        assert_eq!(count(&fresh.path, &sql), 1, "{} recorded once", m.file_name);
    }
    assert_eq!(
        count(&fresh.path, "select count(*) from cairnq_meta where key = 'protocol_version' and value = '1'"),
        1
    );
}
