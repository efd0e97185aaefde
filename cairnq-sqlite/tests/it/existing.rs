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

/// A database without the steps table (extension ext_0009, here dropped
/// by hand, as an installation the Python SDK made lacks it) opened as it
/// is: its tasks show no steps, and a step is refused as unsupported
/// before anything is written.
#[tokio::test]
async fn existing_without_the_steps_table_shows_no_steps_and_stores_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("q.db");
    let installed = CairnQ::new(SqliteStore::open(&path).await.expect("install"));
    let task = installed.submit("charge", &serde_json::json!({})).await.expect("submit");
    installed.close().await.expect("close");
    let conn = cairnq_sqlite::rusqlite::Connection::open(&path).expect("open raw");
    conn.execute_batch("drop table cairnq_ext_steps").expect("drop the steps table");
    drop(conn);

    let looking = CairnQ::new(SqliteStore::open_with(&path, existing()).await.expect("open existing"));
    assert!(looking.steps(&task.id).await.expect("steps").is_empty());
    let worker = looking.worker_session("w1", std::time::Duration::from_secs(30)).expect("a session");
    let draw = cairnq_core::store::ClaimDraw::new(vec!["default".into()]);
    assert_eq!(worker.claim(vec![draw], vec![]).await.expect("claim").len(), 1);
    assert!(matches!(worker.steps(&task.id).await, Err(Error::UnsupportedBackend { .. })));
    let stored = worker.save_step(&task.id, 1, "charge", Ok(cairnq_core::Json::null())).await;
    assert!(matches!(stored, Err(Error::UnsupportedBackend { .. })), "{stored:?}");
    looking.close().await.expect("close");
}
