//! Cross-language tests on one SQLite file: the Python reference SDK
//! (cairnq==0.15.1 from PyPI, run as a black box through `interop/peer.py`)
//! and this workspace open, migrate, read and settle each other's tasks.

use std::time::Duration;

use cairnq_protocol::Dialect;

use crate::support::{extension_migrations, peer, python_task_matches};
use cairnq_core::{CairnQ, SubmitOptions, TaskStatus};
use cairnq_sqlite::SqliteStore;
use serde_json::{Value, json};

async fn rust_client(path: &std::path::Path) -> CairnQ {
    CairnQ::new(SqliteStore::open(path).await.expect("open sqlite"))
}

/// Either side opens a file the other created without applying a shared
/// migration; Rust adds only its extension migrations (schedules), so the
/// shared ledger, the meta rows and every object match whichever side
/// created the file, and Python keeps working on the extended file.
#[tokio::test]
async fn a_database_either_side_created_is_opened_by_the_other_without_migrating() {
    let dir = tempfile::tempdir().expect("temp dir");
    let by_rust = dir.path().join("rust.db");
    let by_python = dir.path().join("python.db");
    let names = |schema: &Value| -> Vec<String> {
        schema["ledger"]
            .as_array()
            .expect("ledger")
            .iter()
            .filter_map(|row| row[0].as_str().map(str::to_string))
            .collect()
    };

    rust_client(&by_rust).await.close().await.expect("close");
    let rust_schema = peer(&["schema", by_rust.to_str().expect("utf-8 path")]);
    peer(&["create", by_rust.to_str().expect("utf-8 path")]);
    let after_python_opened = peer(&["schema", by_rust.to_str().expect("utf-8 path")]);
    assert_eq!(rust_schema["ledger"], after_python_opened["ledger"], "Python applied a migration to a Rust-made file");

    peer(&["create", by_python.to_str().expect("utf-8 path")]);
    let python_schema = peer(&["schema", by_python.to_str().expect("utf-8 path")]);
    rust_client(&by_python).await.close().await.expect("close");
    let after_rust_opened = peer(&["schema", by_python.to_str().expect("utf-8 path")]);
    let extensions = extension_migrations(Dialect::Sqlite);
    let mut expected = names(&python_schema);
    expected.extend(extensions.iter().map(|n| n.to_string()));
    assert_eq!(names(&after_rust_opened), expected, "Rust added only its extension migrations to a Python-made file");
    let shared_rows = &after_rust_opened["ledger"].as_array().expect("ledger")
        [..python_schema["ledger"].as_array().expect("ledger").len()];
    assert_eq!(shared_rows, python_schema["ledger"].as_array().expect("ledger").as_slice(), "shared rows untouched");

    assert_eq!(rust_schema["objects"], after_rust_opened["objects"], "sqlite_master differs by creator");
    assert_eq!(rust_schema["meta"], json!({"protocol_version": "1", "schema_version": "10"}));
    assert_eq!(after_rust_opened["meta"], rust_schema["meta"], "an extension never sets schema_version");
    let mut ours: Vec<String> = cairnq_protocol_names().into_iter().map(str::to_string).collect();
    ours.extend(extensions.iter().map(|n| n.to_string()));
    assert_eq!(names(&rust_schema), ours);
}

fn cairnq_protocol_names() -> Vec<&'static str> {
    vec![
        "0001_init.sql",
        "0002_purge_index.sql",
        "0004_lease_index.sql",
        "0005_clear_terminal_lease.sql",
        "0006_claim_name_index.sql",
        "0007_purge_status_index.sql",
        "0008_claim_due_index.sql",
        "0009_purge_queue_index.sql",
        "0010_drop_status_index.sql",
    ]
}

#[tokio::test]
async fn a_python_task_is_read_cancelled_and_retried_by_rust() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path");
    let submitted = peer(&["submit", db, "py_job", r#"{"list":[1,2.5,"ü"],"deep":{"x":null}}"#]);
    let id = submitted["id"].as_str().expect("id");

    let client = rust_client(&path).await;
    let read = client.get(id).await.expect("get").expect("task exists");
    python_task_matches(&read, &submitted);
    let by_key = client.get_by_key("py-key-py_job").await.expect("get_by_key").expect("key resolves");
    assert_eq!(by_key.id, id);

    let canceled = client.cancel(id).await.expect("cancel").expect("queued task cancels");
    assert_eq!(canceled.status, TaskStatus::Canceled);
    let retried = client.retry(id).reset_attempt().await.expect("retry").expect("canceled task retries");
    assert_eq!(retried.status, TaskStatus::Queued);
    client.close().await.expect("close");

    let seen_by_python = peer(&["get", db, id]);
    python_task_matches(&retried, &seen_by_python);
    assert_eq!(seen_by_python["status"], "queued");
    assert_eq!(seen_by_python["completed_at_ms"], Value::Null);
}

#[tokio::test]
async fn a_rust_task_is_claimed_and_completed_by_python_with_every_column_round_tripping() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let db = path.to_str().expect("utf-8 path");
    let client = rust_client(&path).await;
    let payload = json!({"text": "héllo ✓", "nested": {"n": [1, 2.5, -3], "empty": {}}, "flag": true});
    let submitted = client
        .submit("rs_job", &payload)
        .options(
            SubmitOptions::new()
                .key("rs-key")
                .priority(9)
                .delay(Duration::from_millis(1))
                .max_attempts(5)
                .metadata(json!({"tenant": "ü", "tags": ["a", "b"]}))
                .correlation_id("corr-1"),
        )
        .await
        .expect("submit");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    let seen_by_python = peer(&["get", db, &submitted.id]);
    python_task_matches(&submitted, &seen_by_python);

    let result = json!({"ok": true, "score": 0.25, "name": "ü"});
    let settled = peer(&["claim-complete", db, "rs_job", &result.to_string()]);
    assert_eq!(settled["claimed"]["id"], submitted.id.as_str());
    assert_eq!(settled["claimed"]["attempt"], 1);

    let done = client.get(&submitted.id).await.expect("get").expect("exists");
    python_task_matches(&done, &settled["completed"]);
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result, Some(result.into()));
    assert_eq!(done.progress, Some(1.0));
    assert_eq!(done.worker_id.as_deref(), Some("worker_python"));
    assert_eq!(done.lease_until_ms, None);
    assert_eq!(done.payload, payload);
    client.close().await.expect("close");
}
