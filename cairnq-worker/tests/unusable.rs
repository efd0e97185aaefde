//! A worker on a database it cannot write: it must say so once and stop
//! (the default), or back off while it keeps retrying — never fail claim
//! after claim at poll speed.
//!
//! The worker is a real process, the testkit's child (`cairnq_testkit::child`,
//! mode `noop`), which prints a line per claim attempt, per reported issue,
//! and how its run ended, so the parent counts both over a time window. On
//! SQLite the database is a real file made read-only, and the child runs as
//! a user the file's permissions stop (see `cairnq_testkit::unprivileged`;
//! as root that is `runuser -u postgres`). On Postgres it is a role of the
//! test's own that may read the cairnq tables but not write them.
//!
//! Why read-only and not "corrupted under a running worker": overwriting
//! the header of a file a store holds open goes unnoticed by its
//! connections (SQLite serves page 1 from its cache, and in WAL mode keeps
//! that cache while the WAL index is unchanged), so such a test would
//! measure SQLite's caching, not the worker. A fresh connection to such a
//! file fails with SQLITE_NOTADB, which is unusable like a read-only file.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use cairnq_core::store::ListFilter;
use cairnq_core::{CairnQ, Store, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::StoreLocator;
use cairnq_testkit::child::{ChildArgs, ChildMode, ChildProcess, signal};
use cairnq_testkit::unprivileged;
use serde_json::json;

/// The child's poll interval: a worker without backoff tries 20 claims a
/// second.
const POLL_MS: u64 = 50;
/// Far longer than the child takes to start or to end.
const PATIENCE: Duration = Duration::from_secs(60);

/// A SQLite file holding one queued task, made read-only for the child: the
/// file 0444 (so the child's SQLite opens it read-only), its directory 0777
/// (so the child can create the `-wal` and `-shm` files WAL mode needs).
async fn read_only_database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tasks.db");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    client.submit("noop", &json!({})).await.expect("submit");
    client.close().await.expect("close");
    // Opened again with a row in it, the store records planner statistics,
    // so the child's open has nothing left to write.
    SqliteStore::open(&path).await.expect("reopen").close().await.expect("close");
    unprivileged::set_mode(&path, 0o444).expect("chmod file");
    unprivileged::set_mode(dir.path(), 0o777).expect("chmod dir");
    (dir, path)
}

/// The child worker's arguments: every claim attempt and issue reported.
fn worker_args(locator: StoreLocator, keep_retrying: bool) -> ChildArgs {
    let mut args = ChildArgs::new(locator, ChildMode::Noop);
    (args.poll_ms, args.keep_retrying, args.report_issues, args.report_claims) = (POLL_MS, keep_retrying, true, true);
    args
}

/// Starts the child worker on the read-only file as a user the file's
/// permissions stop, or says why it cannot.
fn spawn_unprivileged(path: &Path, keep_retrying: bool) -> Option<ChildProcess> {
    let args = worker_args(StoreLocator::Sqlite { path: path.to_path_buf() }, keep_retrying);
    ChildProcess::spawn_unprivileged(&args).expect("start the child worker")
}

/// What the child did in a window starting when it said `ready`.
#[derive(Debug, Default)]
struct Observed {
    /// The worker's own process id (under `runuser`, not the child's).
    pid: u32,
    claims: usize,
    issues: Vec<String>,
    /// The `exit ok` / `exit err ...` line, if the child ended.
    ended: Option<String>,
}

/// Reads the child's lines for `window` after `ready` (or until it ended).
async fn observe(child: &mut ChildProcess, window: Duration) -> Observed {
    let ready = child.line_starting("ready ", PATIENCE).await.expect("the child worker comes up");
    let pid = ready.split(' ').nth(1).and_then(|pid| pid.parse().ok()).expect("a process id");
    let deadline = Instant::now() + window;
    let mut seen = Observed { pid, ..Observed::default() };
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok((_, line)) = child.next_line(left).await else { break };
        if line == "claim" {
            seen.claims += 1;
        } else if let Some(issue) = line.strip_prefix("issue ") {
            seen.issues.push(issue.to_string());
        } else if line.starts_with("exit ") {
            seen.ended = Some(line);
            break;
        }
    }
    seen
}

/// The worker claimed at most once, reported one issue saying it stops,
/// and its run ended with an unusable error (the child's exit code 1);
/// each message starting with `cause`, said once.
///
/// At most once, not exactly once: the claim loop and the start-up repair
/// both write, and either may meet the read-only database first. When the
/// repair does (a loaded machine can hold the claim loop back that long),
/// the worker stops before its first claim, which is as right.
fn assert_stopped_once(seen: &Observed, status: Option<ExitStatus>, cause: &str) {
    let ended = seen.ended.as_deref().unwrap_or_else(|| {
        panic!("the worker still ran after {PATIENCE:?} ({} claim attempts, {} issues)", seen.claims, seen.issues.len())
    });
    assert!(seen.claims <= 1, "a claim that cannot heal was tried again: {} claims", seen.claims);
    assert_eq!(seen.issues.len(), 1, "reported once: {:?}", seen.issues);
    let issue = &seen.issues[0];
    assert!(issue.contains("waiting will not help, so the worker stops"), "{issue}");
    assert!(issue.contains(cause), "{issue}");
    let error = ended.strip_prefix("exit err ").unwrap_or_else(|| panic!("run returned Ok: {ended}"));
    assert!(error.starts_with("unusable database: ") && error.contains(cause), "{error}");
    assert_eq!(status.and_then(|s| s.code()), Some(1), "the child's exit code says it failed");
    for shown in [issue.as_str(), error] {
        assert!(!shown.contains("storage error: storage error"), "{shown}");
        assert_eq!(shown.matches("unusable database: ").count(), 1, "{shown}");
    }
}

/// Leaves no worker behind: the process itself may sit under `runuser`.
async fn end(child: &mut ChildProcess, seen: &Observed) -> Option<ExitStatus> {
    if seen.ended.is_none() {
        let _ = signal(seen.pid, "KILL");
    }
    child.wait(PATIENCE).await.ok()
}

/// The one task is still queued and was never claimed: nothing was written.
async fn assert_untouched(path: &Path) {
    let client = CairnQ::new(SqliteStore::open(path).await.expect("open for the check"));
    let tasks = client.list(&ListFilter::new()).await.expect("list").tasks;
    assert_eq!(tasks.len(), 1);
    assert_eq!((tasks[0].status, tasks[0].attempt), (TaskStatus::Queued, 0), "the read-only file changed");
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_on_a_read_only_database_stops_with_one_clear_error() {
    let (_dir, path) = read_only_database().await;
    let Some(mut child) = spawn_unprivileged(&path, false) else { return };
    // Until it ends (at most PATIENCE): how long stopping takes is the
    // machine's business; what it did before it stopped is the verdict.
    let seen = observe(&mut child, PATIENCE).await;
    let status = end(&mut child, &seen).await;
    eprintln!("stop policy: {} claim attempt(s), issues {:?}, {:?}", seen.claims, seen.issues, seen.ended);
    assert_stopped_once(&seen, status, &format!("{} is not writable by this process", path.display()));
    assert_untouched(&path).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_retrying_backs_off_and_reports_the_cause_once() {
    let (_dir, path) = read_only_database().await;
    let Some(mut child) = spawn_unprivileged(&path, true) else { return };

    let window = Duration::from_secs(3);
    let seen = observe(&mut child, window).await;
    // To the worker itself: `runuser` would not pass the signal on.
    signal(seen.pid, "TERM").expect("SIGTERM the worker");
    let status = child.wait(PATIENCE).await.expect("the child ends after SIGTERM");
    let rest = child.rest().await;
    eprintln!("keep-retrying policy: {} claim attempt(s) in {window:?}, issues {:?}", seen.claims, seen.issues);

    assert_eq!(seen.ended, None, "the worker stopped although told to keep retrying");
    // Without backoff: one claim per poll, 60 in the window. With it
    // (pauses of 25-50, 50-100, 100-200 ms ... doubling): 6 or 7.
    assert!(seen.claims >= 4, "the worker stopped retrying: {} claims", seen.claims);
    assert!(seen.claims <= 10, "{} claims in {window:?}: no backoff", seen.claims);
    assert_eq!(seen.issues.len(), 1, "the cause is reported once per outage: {:?}", seen.issues);
    assert!(seen.issues[0].contains("retrying with backoff"), "{}", seen.issues[0]);
    assert!(seen.issues[0].contains("is not writable by this process"), "{}", seen.issues[0]);
    assert!(rest.iter().any(|line| line == "exit ok"), "a SIGTERM ends a retrying worker normally: {rest:?}");
    assert!(status.success(), "{status:?}");
    assert_untouched(&path).await;
}

/// Postgres: a role of the test's own that may read the cairnq tables but
/// not write them (permission denied, SQLSTATE 42501) gets the same
/// treatment, whoever runs the test.
#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_worker_without_write_privileges_stops_with_one_clear_error() {
    use cairnq_testkit::postgres::{TestRole, fresh_schema_name, open, raw, test_dsn};
    let dsn = test_dsn().expect("a test Postgres server (set CAIRNQ_TEST_PG_DSN or install Postgres)");
    let role = match TestRole::create(&dsn).await {
        Ok(role) => role,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let schema = fresh_schema_name();
    let admin = CairnQ::new(open(&dsn, &schema).await.expect("install"));
    let task = admin.submit("noop", &json!({})).await.expect("submit");
    // It may read (and run the idempotent DDL of a connect), never write.
    let name = role.name();
    let grants = format!(
        "grant usage, create on schema {schema} to {name}; grant select on all tables in schema {schema} to {name}"
    );
    raw(&dsn).await.batch_execute(&grants).await.expect("grant");

    let locator = StoreLocator::Postgres { dsn: role.dsn(&dsn), schema };
    let mut child = ChildProcess::spawn(&worker_args(locator, false)).expect("start the child worker");
    let seen = observe(&mut child, PATIENCE).await;
    let status = end(&mut child, &seen).await;
    eprintln!(
        "postgres, no write privilege: {} claim attempt(s), issues {:?}, {:?}",
        seen.claims, seen.issues, seen.ended
    );
    let cause = "permission denied for table cairnq_tasks (SQLSTATE 42501";
    assert_stopped_once(&seen, status, cause);
    let ended = seen.ended.unwrap_or_default();
    assert!(ended.starts_with(&format!("exit err unusable database: {cause}")), "the cause comes first: {ended}");
    let row = admin.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((row.status, row.attempt), (TaskStatus::Queued, 0), "nothing was written");
    admin.close().await.expect("close");
}
