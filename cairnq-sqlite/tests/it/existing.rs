//! `Install::Existing` and the read-only inspections: they use a database
//! as it is and never create or change a file.

use cairnq_core::{CairnQ, Error, Install};
use cairnq_sqlite::{SqliteOptions, SqliteStore};

fn existing() -> SqliteOptions {
    SqliteOptions::new().install(Install::Existing)
}

#[tokio::test]
async fn existing_refuses_a_missing_file_without_creating_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("typo.db");
    match SqliteStore::open_with(&path, existing()).await {
        Err(Error::Unusable { message, .. }) => assert!(message.contains("no such file"), "{message}"),
        other => panic!("expected Unusable, got {other:?}"),
    }
    assert!(!path.exists(), "nothing is created");
    let ledger = SqliteStore::migrations(&path).await.expect("status of a missing file");
    assert!(!ledger.is_empty() && ledger.iter().all(|m| !m.is_applied() && m.sql.is_some()));
    assert!(!path.exists(), "looking created nothing");
    assert!(matches!(SqliteStore::file_health(&path).await, Err(Error::Unusable { .. })));
}

#[tokio::test]
async fn existing_refuses_files_that_are_not_cairnq_databases_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in [("empty.db", &b""[..]), ("notes.db", b"not a database at all, just text\n")] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        match SqliteStore::open_with(&path, existing()).await {
            Err(Error::Unusable { message, .. }) => assert!(message.contains(name), "{message}"),
            other => panic!("{name}: expected Unusable, got {other:?}"),
        }
        assert_eq!(std::fs::read(&path).expect("read"), bytes, "{name} unchanged");
    }
}

#[tokio::test]
async fn existing_opens_an_installed_database_and_reads_and_writes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("q.db");
    let installed = CairnQ::new(SqliteStore::open(&path).await.expect("install"));
    let task = installed.submit("resize", &serde_json::json!({"w": 1})).await.expect("submit");
    installed.close().await.expect("close");

    let looking = CairnQ::new(SqliteStore::open_with(&path, existing()).await.expect("open existing"));
    assert_eq!(looking.get(&task.id).await.expect("get").map(|t| t.id), Some(task.id.clone()));
    assert!(looking.cancel(&task.id).await.expect("cancel").is_some(), "writes work on an existing database");
    looking.close().await.expect("close");

    let ledger = SqliteStore::migrations(&path).await.expect("ledger");
    assert!(ledger.iter().all(|m| m.is_applied()), "{ledger:?}");
    let health = SqliteStore::file_health(&path).await.expect("health");
    assert!(health.is_ok() && health.journal_mode == "wal", "{health:?}");
}
