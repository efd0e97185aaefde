//! Opening: foreign protocol versions, bad paths, cold starts.

use std::process::Stdio;

use cairnq_core::ErrorKind;
use cairnq_sqlite::SqliteStore;

use cairnq_testkit::unprivileged::set_mode;

use crate::child::{OPEN_ERROR, OPENED};
use crate::common::{count, fresh_path, open_store, raw, spawn_child, spawn_unprivileged_child};

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
/// stop: `Ok(())` when it opened, else the error's text. `None`: skipped.
fn open_as_unprivileged(path: &std::path::Path) -> Option<Result<(), String>> {
    let output = spawn_unprivileged_child("report_open", path, Stdio::piped())?.wait_with_output().expect("child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the child failed: {stdout}");
    if stdout.lines().any(|line| line == OPENED) {
        return Some(Ok(()));
    }
    let error = stdout.lines().find_map(|line| line.strip_prefix(OPEN_ERROR));
    Some(Err(error.unwrap_or_else(|| panic!("the child reported nothing: {stdout}")).to_string()))
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

    let existing = open_as_unprivileged(&fresh.path);
    let new = open_as_unprivileged(&fresh.dir.path().join("new.db"));
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

#[test]
fn eight_processes_cold_starting_on_one_new_file_all_open_it_and_apply_each_migration_once() {
    let fresh = fresh_path();
    let children: Vec<_> = (0..8).map(|_| spawn_child("open", &fresh.path, Stdio::piped())).collect();
    for child in children {
        let output = child.wait_with_output().expect("child output");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "a child failed to open: {stdout}");
        assert!(stdout.contains(OPENED), "a child did not report opening: {stdout}");
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
