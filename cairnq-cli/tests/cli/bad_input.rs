//! Bad input gets one clear line and a non-zero exit, and nothing is
//! written: no file created, no row changed.

use crate::support::{Cli, Fixture, path_text};

#[tokio::test(flavor = "multi_thread")]
async fn read_only_commands_never_create_a_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("typo.db");
    let cli = Cli { db: path_text(&path), schema: None };
    for args in [&["get", "task_x"][..], &["list"], &["stats"], &["doctor"], &["purge", "--older-than", "1d"]] {
        cli.run(args).refused(1, "no such file");
        assert!(!path.exists(), "{args:?} created {}", path.display());
    }
    // Bad input to a command that may create: refused before the open.
    cli.run(&["submit", "x", "--payload", "{nope"]).refused(2, "--payload is not valid JSON");
    cli.run(&["submit", "x", "--delay", "soon"]).refused(2, "is not a duration");
    // A run_at past the protocol's 64-bit epoch milliseconds (now + about 300 million years).
    cli.run(&["submit", "x", "--delay", "300000000y"]).refused(2, "invalid delay");
    cli.run(&["worker", "--exec", "cat", "--lease", "300000000y"]).refused(2, "invalid lease");
    cli.run(&["submit", "x", "--metadata", "[1]"]).refused(2, "--metadata must be a JSON object");
    cli.run(&["worker", "--exec", "  "]).refused(2, "command");
    cli.run(&["worker", "--exec", "cat", "--concurrency", "0"]).refused(2, "concurrency");
    cli.run(&["worker", "--exec", "cat", "--lease", "forever"]).refused(2, "is not a duration");
    assert!(!path.exists(), "refused input created the file");
    // migrate status and sql only look.
    let status = cli.json(&["-o", "json", "migrate", "status"]);
    assert!(status.as_array().is_some_and(|all| all.iter().all(|m| m["applied_at_ms"].is_null())), "{status}");
    assert!(cli.run(&["migrate", "sql"]).stdout.contains("create table"), "the pending SQL is printed");
    assert!(!path.exists(), "migrate status/sql created the file");
    // migrate creates it.
    let applied = cli.json(&["-o", "json", "migrate"]);
    assert!(applied.as_array().is_some_and(|all| all.iter().all(|m| m["applied_at_ms"].is_i64())), "{applied}");
    assert_eq!(cli.json(&["-o", "json", "stats"]), serde_json::json!({}));
}

#[tokio::test(flavor = "multi_thread")]
async fn files_that_are_not_cairnq_databases_are_left_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in [("text.db", &b"just some notes, not a database\n"[..]), ("empty.db", b"")] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let cli = Cli { db: path_text(&path), schema: None };
        let ran = cli.run(&["list"]);
        assert_eq!(ran.code, 1, "{}", ran.stderr);
        ran.refused(1, &path_text(&path));
        cli.run(&["stats"]).refused(1, "");
        assert_eq!(std::fs::read(&path).expect("read"), bytes, "{name} was changed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_change_nothing() {
    let fixture = Fixture::sqlite().await;
    let task = fixture.client.submit("resize", &serde_json::json!({})).await.expect("submit");
    let before = fixture.client.stats(None).await.expect("stats");
    let cli = &fixture.cli;
    cli.run(&["get", "task_nope"]).refused(3, "no task with id task_nope");
    cli.run(&["get", "--key", "nope"]).refused(3, "no task with key");
    cli.run(&["wait", "task_nope"]).refused(3, "no task");
    cli.run(&["cancel", "task_nope"]).refused(3, "no task");
    cli.run(&["purge", "--older-than", "1d", "--status", "queued"]).refused(2, "not terminal");
    cli.run(&["purge", "--older-than", "a week"]).refused(2, "is not a duration");
    cli.run(&["list", "--after", "yesterday"]).refused(2, "not a list cursor");
    cli.run(&["list", "--status", "lost"]).refused(2, "invalid value 'lost'");
    cli.run(&["retry"]).refused(2, "say which tasks to retry");
    cli.run(&["retry", "--status", "queued", "--queue", "default"]).refused(2, "only failed or canceled");
    cli.run(&["stats", "--watch", "0s"]).refused(2, "--watch");
    cli.run(&["-o", "yaml", "stats"]).refused(2, "invalid value 'yaml'");
    cli.run(&["--schema", "jobs", "stats"]).refused(2, "applies to Postgres only");
    cli.run(&["retry", &task.id]).refused(1, "is queued: nothing to retry");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before);
    let unset = std::process::Command::new(crate::support::binary()).args(["stats"]).env_remove("CAIRNQ_DB").output();
    let unset = unset.expect("run");
    assert_eq!(unset.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unset.stderr).contains("no database given"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_or_uninstalled_postgres_is_one_line() {
    let unreachable = Cli { db: "postgres://postgres@127.0.0.1:1/nowhere?connect_timeout=2".into(), schema: None };
    unreachable.run(&["stats"]).refused(1, "");
    let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let cli = Cli { db: dsn.clone(), schema: Some(schema.clone()) };
    cli.run(&["list"]).refused(1, "no cairnq installation");
    let status = cli.json(&["-o", "json", "migrate", "status"]);
    assert!(status.as_array().is_some_and(|all| all.iter().all(|m| m["applied_at_ms"].is_null())), "{status}");
    let exists = cairnq_testkit::postgres::raw(&dsn)
        .await
        .query_one("select exists (select 1 from pg_namespace where nspname = $1)", &[&schema])
        .await
        .expect("query");
    assert!(!exists.get::<_, bool>(0), "looking created the schema");
}
