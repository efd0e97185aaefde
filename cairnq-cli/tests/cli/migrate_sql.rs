//! `cairnq migrate sql` prints a script a team runs through its own tool
//! (here the stock `sqlite3` and `psql` clients, as such a tool would): on
//! a fresh database and on one the Python SDK already migrated, applying
//! it leaves nothing pending, the Python SDK opens the database without
//! migrating anything, and the binary's submit and get work on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cairnq_core::Store;
use cairnq_sqlite::SqliteStore;
use serde_json::json;

use crate::support::{Cli, Ran, path_text, peer};

/// Runs `script` through `program args` on stdin, stopping at the first
/// error; panics with the client's words when it fails.
fn apply(program: &Path, args: &[&str], script: &str) {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} (is it installed?): {e}", program.display()));
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("write the script");
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success(), "{} failed: {}", program.display(), String::from_utf8_lossy(&output.stderr));
}

/// psql as `scripts/pg-test-server.sh` finds the server's binaries: PG_BIN,
/// else the newest /usr/lib/postgresql/*/bin, else PATH.
fn psql() -> PathBuf {
    if let Some(bin) = std::env::var_os("PG_BIN") {
        return Path::new(&bin).join("psql");
    }
    let mut installed: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| dirs.filter_map(|d| d.ok()).map(|d| d.path().join("bin/psql")).filter(|p| p.exists()).collect())
        .unwrap_or_default();
    installed.sort_by_key(|p| p.iter().nth(4).and_then(|v| v.to_str()?.parse::<u32>().ok()));
    installed.pop().unwrap_or_else(|| PathBuf::from("psql"))
}

/// The names of the migrations a script applies, in order.
fn migrations_in(script: &str) -> Vec<&str> {
    script.lines().filter_map(|line| line.strip_prefix("-- migration: ")).collect()
}

/// The ledger as `migrate status -o json` prints it: (name, applied_at_ms).
fn ledger(cli: &Cli) -> Vec<(String, Option<i64>)> {
    let status = cli.json(&["-o", "json", "migrate", "status"]);
    status
        .as_array()
        .expect("array")
        .iter()
        .map(|m| (m["name"].as_str().unwrap_or("").into(), m["applied_at_ms"].as_i64()))
        .collect()
}

/// Prints the script, checks it holds exactly the pending migrations (and
/// that `-o json` agrees), and applies it with `run`.
fn print_and_apply(cli: &Cli, run: impl FnOnce(&str)) -> Vec<String> {
    let pending: Vec<String> = ledger(cli).into_iter().filter(|(_, at)| at.is_none()).map(|(name, _)| name).collect();
    let printed = cli.run(&["migrate", "sql"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert_eq!(migrations_in(&printed.stdout), pending, "the script applies exactly what is pending");
    let document = cli.json(&["-o", "json", "migrate", "sql"]);
    assert_eq!(document["script"], json!(printed.stdout));
    let names: Vec<&str> =
        document["pending"].as_array().expect("pending").iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, pending);
    run(&printed.stdout);
    let after = ledger(cli);
    assert!(after.iter().all(|(_, at)| at.is_some()), "nothing pending after the script: {after:?}");
    assert_eq!(migrations_in(&cli.run(&["migrate", "sql"]).stdout), Vec::<&str>::new());
    pending
}

/// The Python SDK opens the database without migrating (the ledger is as
/// it was), its task is visible to the binary, and the binary submits.
fn python_and_the_binary_use_it(cli: &Cli, peer_db: &str) {
    let before = ledger(cli);
    let submitted = peer(&["submit", peer_db, "from_python", r#"{"n": 1}"#]);
    assert_eq!(ledger(cli), before, "the Python SDK found nothing to migrate");
    let got = cli.json(&["-o", "json", "get", "--key", "py-key-from_python"]);
    assert_eq!(got["id"], submitted["id"]);
    let mine = cli.json(&["-o", "json", "submit", "from_cli", "--payload", r#"{"n": 2}"#]);
    let id = mine["id"].as_str().expect("an id");
    assert_eq!(cli.json(&["-o", "json", "get", id])["payload"], json!({"n": 2}));
}

fn sqlite3(path: &Path) -> impl FnOnce(&str) + '_ {
    move |script| apply(Path::new("sqlite3"), &["-bail", &path_text(path)], script)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_script_installs_a_fresh_sqlite_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("scripted.db");
    let cli = Cli { db: path_text(&path), schema: None };
    let applied = print_and_apply(&cli, |script| {
        assert!(!path.exists(), "printing created nothing");
        sqlite3(&path)(script);
    });
    assert_eq!(applied.len(), cairnq_sqlite::SqliteStore::migrations(&path).await.expect("ledger").len());

    // The same tables, indexes, triggers and meta rows as a store's open makes.
    let opened = dir.path().join("opened.db");
    SqliteStore::open(&opened).await.expect("open").close().await.expect("close");
    let scripted = peer(&["schema", &path_text(&path)]);
    let reference = peer(&["schema", &path_text(&opened)]);
    assert_eq!(scripted["objects"], reference["objects"]);
    assert_eq!(scripted["meta"], reference["meta"]);
    let report = cli.json(&["-o", "json", "doctor"]);
    assert_eq!(report["problems"], json!([]), "WAL on, nothing pending: {report}");

    python_and_the_binary_use_it(&cli, &cli.db);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_script_finishes_a_sqlite_file_the_python_sdk_migrated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("python.db");
    let cli = Cli { db: path_text(&path), schema: None };
    peer(&["create", &cli.db]);
    let shared = ledger(&cli).into_iter().filter(|(_, at)| at.is_some()).collect::<Vec<_>>();
    assert!(!shared.is_empty(), "the Python SDK applied the shared migrations");
    let script = cli.run(&["migrate", "sql"]).stdout;
    assert!(!script.contains("create table if not exists cairnq_migrations"), "the ledger is there already");
    let applied = print_and_apply(&cli, sqlite3(&path));
    assert!(!applied.is_empty() && applied.iter().all(|name| name.starts_with("ext_")), "{applied:?}");
    let after = ledger(&cli);
    assert!(shared.iter().all(|entry| after.contains(entry)), "the Python SDK's ledger rows are untouched");
    python_and_the_binary_use_it(&cli, &cli.db);
}

/// Applies the script on the test server with psql.
fn psql_on(dsn: &str) -> impl FnOnce(&str) + '_ {
    move |script| apply(&psql(), &["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-", dsn], script)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_script_installs_a_fresh_postgres_schema() {
    let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let cli = Cli { db: dsn.clone(), schema: Some(schema.clone()) };
    let script = cli.run(&["migrate", "sql"]).stdout;
    assert!(script.contains(&format!("set search_path to \"{schema}\";")), "{script}");
    print_and_apply(&cli, psql_on(&dsn));
    python_and_the_binary_use_it(&cli, &format!("{dsn}#schema={schema}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_script_finishes_a_postgres_schema_the_python_sdk_migrated() {
    let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
    let schema = cairnq_testkit::postgres::fresh_schema_name();
    let cli = Cli { db: dsn.clone(), schema: Some(schema.clone()) };
    let peer_db = format!("{dsn}#schema={schema}");
    peer(&["create", &peer_db]);
    let applied = print_and_apply(&cli, psql_on(&dsn));
    assert!(!applied.is_empty() && applied.iter().all(|name| name.starts_with("ext_")), "{applied:?}");
    python_and_the_binary_use_it(&cli, &peer_db);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_of_another_protocol_gets_no_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("other.db");
    SqliteStore::open(&path).await.expect("open").close().await.expect("close");
    cairnq_sqlite::rusqlite::Connection::open(&path)
        .and_then(|conn| conn.execute("update cairnq_meta set value = '2' where key = 'protocol_version'", []))
        .expect("pretend another protocol");
    let ran: Ran = Cli { db: path_text(&path), schema: None }.run(&["migrate", "sql"]);
    ran.refused(1, "protocol");
}
