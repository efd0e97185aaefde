//! Extension objects cannot collide with the shared protocol (PROTOCOL.md,
//! Extensions): every table, index, trigger and function this SDK adds is
//! named `cairnq_ext_*`, and a database of the previous release, whose
//! schedules table was `cairnq_schedules`, is renamed in place by
//! `ext_0005_schedules_ext_name` with its rows kept, on both backends, while
//! the Python SDK 0.15.1 keeps working on it.
//!
//! "Made by the previous release" is a fresh installation taken back to
//! that release's shape: the rename reverted and its ledger row removed.
//! Every other migration is pinned byte for byte
//! (`cairnq-protocol/tests/migrations.rs`), so that is the exact shape the
//! previous release left, schedules and all.

use std::collections::BTreeSet;

use cairnq_core::{CairnQ, Store};
use cairnq_sqlite::SqliteStore;
use serde_json::Value;

use crate::schedules::{assert_ran_by_python, python_works_as_before, schedule_and_fire};
use crate::support::peer;

/// The migration this test is about.
const RENAME: &str = "ext_0005_schedules_ext_name.sql";

/// How many processes open the upgraded database at once.
const OPENERS: usize = 4;

/// Names a fresh installation may hold beyond the shared set: its own
/// `cairnq_ext_*` objects, and SQLite's automatic indexes of those tables.
fn is_extension_name(name: &str) -> bool {
    name.starts_with("cairnq_ext_") || name.starts_with("sqlite_autoindex_cairnq_ext_")
}

/// The names of the cairnq objects in a SQLite file, as the peer lists them.
fn sqlite_object_names(db: &str) -> BTreeSet<String> {
    let schema = peer(&["schema", db]);
    let objects = schema["objects"].as_array().expect("objects");
    objects.iter().filter_map(|o| o[1].as_str().map(str::to_string)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_sqlite_file_adds_only_cairnq_ext_objects_to_the_shared_set() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (by_python, by_rust) = (dir.path().join("python.db"), dir.path().join("rust.db"));
    peer(&["create", by_python.to_str().expect("utf-8 path")]);
    SqliteStore::open(&by_rust).await.expect("open").close().await.expect("close");
    let shared = sqlite_object_names(by_python.to_str().expect("utf-8 path"));
    let ours = sqlite_object_names(by_rust.to_str().expect("utf-8 path"));
    let added: Vec<_> = ours.difference(&shared).collect();
    assert!(added.iter().any(|name| name.as_str() == "cairnq_ext_schedules"), "{added:?}");
    assert!(added.iter().all(|name| is_extension_name(name)), "objects outside the shared set: {added:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_file_of_the_previous_release_keeps_its_schedules_under_the_new_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("previous.db");
    let db = path.to_str().expect("utf-8 path");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    let fired = schedule_and_fire(&client).await;
    client.close().await.expect("close");
    back_to_the_previous_release(&path);
    assert!(sqlite_object_names(db).contains("cairnq_schedules"), "the previous release's shape");

    let opens = (0..OPENERS).map(|_| SqliteStore::open(&path));
    let stores = futures::future::try_join_all(opens).await.expect("every process opens the file being upgraded");
    let names = sqlite_object_names(db);
    assert!(names.contains("cairnq_ext_schedules") && names.contains("cairnq_ext_schedules_due_idx"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("cairnq_schedules")), "nothing under the old name: {names:?}");
    let client = CairnQ::new(stores.into_iter().next().expect("a store"));
    python_works_as_before(db);
    assert_ran_by_python(&client, fired).await;
    assert_schedule_kept_and_fires(&client).await;
    client.close().await.expect("close");
}

/// Takes a fresh file back to the previous release: schedules under their
/// old names, no ledger row for the rename.
fn back_to_the_previous_release(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    conn.execute_batch(&format!(
        "begin;
         drop index cairnq_ext_schedules_due_idx;
         alter table cairnq_ext_schedules rename to cairnq_schedules;
         create index cairnq_schedules_due_idx on cairnq_schedules (next_fire_ms) where paused = 0;
         delete from cairnq_migrations where name = '{RENAME}';
         commit;"
    ))
    .expect("revert the rename");
}

/// The schedule [`schedule_and_fire`] saved is still there, the same, and
/// fires its next slot from the renamed table.
async fn assert_schedule_kept_and_fires(client: &CairnQ) {
    let schedules = client.schedules().await.expect("schedules");
    let kept: Vec<(&str, &str)> =
        schedules.iter().map(|s| (s.schedule.name.as_str(), s.schedule.task.as_str())).collect();
    assert_eq!(kept, [("py", "scheduled_py")], "the schedule survived the rename");
    for _ in 0..100 {
        if let Some(task) = client.fire_due_schedules().await.expect("fire").fired.into_iter().next() {
            let meta: Value = task.metadata.to_value().expect("json");
            assert_eq!(meta["schedule"], "py", "{meta}");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the kept schedule never fired again");
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use crate::postgres::{dsn, rust_store, with_schema};
    use cairnq_testkit::postgres::{fresh_schema_name, raw};

    /// Relations (tables, indexes, sequences), triggers and functions of a
    /// schema, by name.
    async fn object_names(dsn: &str, schema: &str) -> BTreeSet<String> {
        let sql = "select c.relname::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
                    where n.nspname = $1
                   union all
                   select t.tgname::text from pg_trigger t join pg_class c on c.oid = t.tgrelid
                     join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and not t.tgisinternal
                   union all
                   select p.proname::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                    where n.nspname = $1";
        raw(dsn).await.query(sql, &[&schema]).await.expect("objects").iter().map(|r| r.get(0)).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fresh_postgres_schema_adds_only_cairnq_ext_objects_to_the_shared_set() {
        let (dsn, by_python, by_rust) = (dsn(), fresh_schema_name(), fresh_schema_name());
        peer(&["create", &with_schema(&dsn, &by_python)]);
        rust_store(&dsn, &by_rust).await;
        let shared = object_names(&dsn, &by_python).await;
        let ours = object_names(&dsn, &by_rust).await;
        let added: Vec<_> = ours.difference(&shared).collect();
        assert!(added.iter().any(|name| name.as_str() == "cairnq_ext_schedules"), "{added:?}");
        assert!(added.iter().all(|name| is_extension_name(name)), "objects outside the shared set: {added:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_postgres_schema_of_the_previous_release_keeps_its_schedules_under_the_new_name() {
        let (dsn, schema) = (dsn(), fresh_schema_name());
        let client = CairnQ::new(rust_store(&dsn, &schema).await);
        let fired = schedule_and_fire(&client).await;
        client.close().await.expect("close");
        raw(&dsn)
            .await
            .batch_execute(&format!(
                "begin;
                 set local search_path to {schema};
                 alter table cairnq_ext_schedules rename to cairnq_schedules;
                 alter index cairnq_ext_schedules_due_idx rename to cairnq_schedules_due_idx;
                 alter index cairnq_ext_schedules_pkey rename to cairnq_schedules_pkey;
                 delete from cairnq_migrations where name = '{RENAME}';
                 commit;"
            ))
            .await
            .expect("revert the rename");
        assert!(object_names(&dsn, &schema).await.contains("cairnq_schedules"), "the previous release's shape");

        let opens = (0..OPENERS).map(|_| rust_store(&dsn, &schema));
        let mut stores = futures::future::join_all(opens).await;
        let names = object_names(&dsn, &schema).await;
        let expected = ["cairnq_ext_schedules", "cairnq_ext_schedules_due_idx", "cairnq_ext_schedules_pkey"];
        assert!(expected.iter().all(|e| names.contains(*e)), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("cairnq_schedules")), "nothing under the old name: {names:?}");
        let client = CairnQ::new(stores.pop().expect("a store"));
        python_works_as_before(&with_schema(&dsn, &schema));
        assert_ran_by_python(&client, fired).await;
        assert_schedule_kept_and_fires(&client).await;
        client.close().await.expect("close");
    }
}
