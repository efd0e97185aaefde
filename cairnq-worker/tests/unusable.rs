//! A worker on a database it cannot write: it must say so once and stop
//! (the default), or back off while it keeps retrying — never fail claim
//! after claim at poll speed.
//!
//! The database is a real SQLite file made read-only for a real worker
//! process: this test binary re-runs itself (the ignored
//! `child_worker_entry` test) as a user the file's permissions stop (see
//! `cairnq_testkit::unprivileged`; as root that is `runuser -u postgres`).
//! The child counts its claim attempts through a store that passes every
//! call to the SQLite store and prints a line per claim, and prints every
//! issue the worker reports, so the parent counts both over a time window.
//!
//! On Postgres the same holds for a role without write privileges, shown in
//! process (the database refuses the role, whoever runs the test).
//!
//! Why read-only and not "corrupted under a running worker": overwriting
//! the header of a file a store holds open goes unnoticed by its
//! connections (SQLite serves page 1 from its cache, and in WAL mode keeps
//! that cache while the WAL index is unchanged), so such a test would
//! measure SQLite's caching, not the worker. A fresh connection to such a
//! file fails with SQLITE_NOTADB, which is unusable like a read-only file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cairnq_core::store::{ClaimParams, ListFilter};
use cairnq_core::{CairnQ, Result, Store, Task, TaskStatus};
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::forwarding::{Forward, Forwarding};
use cairnq_testkit::unprivileged;
use cairnq_worker::{OnUnusable, TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use serde_json::{Value, json};

const CHILD_DB: &str = "CAIRNQ_UNUSABLE_DB";
const CHILD_POLICY: &str = "CAIRNQ_UNUSABLE_POLICY";
/// The child's poll interval: a worker without backoff tries 20 claims a
/// second.
const POLL: Duration = Duration::from_millis(50);

/// Child-process entry point; ignored in normal runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run only as a child process by the tests below"]
async fn child_worker_entry() {
    let (Ok(path), Ok(policy)) = (std::env::var(CHILD_DB), std::env::var(CHILD_POLICY)) else {
        panic!("child_worker_entry runs only as a child ({CHILD_DB} and {CHILD_POLICY} unset)");
    };
    let store = SqliteStore::open(&path).await.expect("the child opens the store (reads work on a read-only file)");
    let policy = if policy == "keep" { OnUnusable::KeepRetrying } else { OnUnusable::Stop };
    let options = WorkerOptions::new()
        .poll_interval(POLL)
        .on_unusable(policy)
        .on_error(|issue: WorkerIssue| println!("issue {issue}"));
    let client = CairnQ::new(Forwarding(CountingStore {
        inner: Arc::new(store),
        on_claim: Box::new(|| println!("attempt claim")),
    }));
    let mut worker = Worker::new(client, options).expect("worker");
    worker
        .task("work", |_ctx: TaskContext, _payload: Value| async move { Ok::<_, TaskError>(Value::Null) })
        .expect("register");
    // On a line of its own: libtest has printed `test child_worker_entry ... `.
    println!("\nworker up {}", std::process::id());
    match worker.run_until_signal().await {
        Ok(()) => println!("run ok"),
        Err(e) => println!("run err {e}"),
    }
}

/// A SQLite file holding one queued task, made read-only for the child: the
/// file 0444 (so the child's SQLite opens it read-only), its directory 0777
/// (so the child can create the `-wal` and `-shm` files WAL mode needs).
async fn read_only_database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tasks.db");
    let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
    client.submit("work", &json!({})).await.expect("submit");
    client.close().await.expect("close");
    // Opened again with a row in it, the store records planner statistics,
    // so the child's open has nothing left to write.
    SqliteStore::open(&path).await.expect("reopen").close().await.expect("close");
    unprivileged::set_mode(&path, 0o444).expect("chmod file");
    unprivileged::set_mode(dir.path(), 0o777).expect("chmod dir");
    (dir, path)
}

/// Starts the child worker on `path`, or says why it cannot.
fn spawn_worker(path: &Path, policy: &str) -> Option<Child> {
    let exe = std::env::current_exe().expect("current exe");
    let mut command = match unprivileged::command(&exe) {
        Ok(command) => command,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return None;
        }
    };
    let child = command
        .args(["--ignored", "--exact", "child_worker_entry", "--nocapture", "--test-threads", "1"])
        .env(CHILD_DB, path)
        .env(CHILD_POLICY, policy)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the child worker");
    Some(child)
}

/// What the child printed, as lines arrive.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(std::io::Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    receive
}

/// What the child did in a window starting when it said `up`.
#[derive(Debug, Default)]
struct Observed {
    /// The worker's own process id (under `runuser`, not the child's).
    pid: u32,
    claims: usize,
    issues: Vec<String>,
    /// The `run ok` / `run err ...` line, if `run` returned.
    ended: Option<String>,
}

/// Reads the child's lines for `window` after `up` (or until `run` ended).
fn observe(lines: &mpsc::Receiver<String>, window: Duration) -> Observed {
    let started = Instant::now();
    let pid = loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).expect("the child worker never came up");
        if let Some(pid) = line.strip_prefix("worker up ") {
            break pid.parse().expect("a process id");
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no `up` line");
    };
    let deadline = Instant::now() + window;
    let mut seen = Observed { pid, ..Observed::default() };
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else { break };
        if line == "attempt claim" {
            seen.claims += 1;
        } else if let Some(issue) = line.strip_prefix("issue ") {
            seen.issues.push(issue.to_string());
        } else if line.starts_with("run ") {
            seen.ended = Some(line);
            break;
        }
    }
    seen
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
    let Some(mut child) = spawn_worker(&path, "stop") else { return };
    let lines = lines_of(&mut child);

    let seen = observe(&lines, Duration::from_secs(10));
    if seen.ended.is_none() {
        // Leave no worker behind before failing.
        let _ = std::process::Command::new("kill").args(["-KILL", &seen.pid.to_string()]).status();
    }
    let status = child.wait().ok();
    eprintln!("stop policy: {} claim attempt(s), issues {:?}, {:?}", seen.claims, seen.issues, seen.ended);

    let ended = seen.ended.as_deref().unwrap_or_else(|| {
        panic!("the worker still ran after 10 s ({} claim attempts, {} issues)", seen.claims, seen.issues.len())
    });
    assert!(status.is_some_and(|s| s.success()), "the child test failed: {status:?}");
    assert_eq!(seen.claims, 1, "a claim that cannot heal was tried again");
    assert_eq!(seen.issues.len(), 1, "reported once: {:?}", seen.issues);
    let issue = &seen.issues[0];
    let shown_path = path.display().to_string();
    assert!(issue.contains("waiting will not help, so the worker stops"), "{issue}");
    assert!(issue.contains(&format!("{shown_path} is not writable by this process")), "{issue}");
    let error = ended.strip_prefix("run err ").unwrap_or_else(|| panic!("run returned Ok: {ended}"));
    assert!(error.starts_with("unusable database: "), "{error}");
    assert!(error.contains(&format!("{shown_path} is not writable by this process")), "{error}");
    for shown in [issue.as_str(), error] {
        assert!(!shown.contains("storage error: storage error"), "{shown}");
        assert_eq!(shown.matches("unusable database: ").count(), 1, "{shown}");
    }
    assert_untouched(&path).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_retrying_backs_off_and_reports_the_cause_once() {
    let (_dir, path) = read_only_database().await;
    let Some(mut child) = spawn_worker(&path, "keep") else { return };
    let lines = lines_of(&mut child);

    let window = Duration::from_secs(3);
    let seen = observe(&lines, window);
    // To the worker itself: `runuser` would not pass the signal on.
    let signaled = std::process::Command::new("kill").args(["-TERM", &seen.pid.to_string()]).status();
    assert!(signaled.is_ok_and(|s| s.success()), "kill -TERM {}", seen.pid);
    let rest: Vec<String> = lines.iter().collect();
    let status = child.wait().expect("wait for the child");
    eprintln!("keep-retrying policy: {} claim attempt(s) in {window:?}, issues {:?}", seen.claims, seen.issues);

    assert_eq!(seen.ended, None, "the worker stopped although told to keep retrying");
    // Without backoff: one claim per poll, 60 in the window. With it
    // (pauses of 25-50, 50-100, 100-200 ms ... doubling): 6 or 7.
    assert!(seen.claims >= 4, "the worker stopped retrying: {} claims", seen.claims);
    assert!(seen.claims <= 10, "{} claims in {window:?}: no backoff", seen.claims);
    assert_eq!(seen.issues.len(), 1, "the cause is reported once per outage: {:?}", seen.issues);
    assert!(seen.issues[0].contains("retrying with backoff"), "{}", seen.issues[0]);
    assert!(seen.issues[0].contains("is not writable by this process"), "{}", seen.issues[0]);
    assert!(rest.iter().any(|line| line == "run ok"), "a SIGTERM ends a retrying worker normally: {rest:?}");
    assert!(status.success(), "{status:?}");
    assert_untouched(&path).await;
}

/// Postgres: a role that may read the cairnq tables but not write them
/// (permission denied, SQLSTATE 42501) gets the same treatment, in process.
#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_worker_without_write_privileges_stops_with_one_clear_error() {
    use cairnq_testkit::postgres::{dsn_with_user, fresh_schema_name, open, test_dsn};
    let dsn = test_dsn().expect("a test Postgres server (set CAIRNQ_TEST_PG_DSN or install Postgres)");
    let schema = fresh_schema_name();
    let admin = CairnQ::new(open(&dsn, &schema).await.expect("install"));
    let task = admin.submit("work", &json!({})).await.expect("submit");
    // The role of scripts/pg-test-server.sh that may create nothing; here it
    // may read (and run the idempotent DDL of a connect), never write.
    let grants = format!(
        "grant usage, create on schema {schema} to cairnq_noddl; \
         grant select on all tables in schema {schema} to cairnq_noddl"
    );
    let granted = std::process::Command::new("psql")
        .args([dsn.as_str(), "-v", "ON_ERROR_STOP=1", "-q", "-c", &grants])
        .status()
        .expect("run psql");
    assert!(granted.success(), "psql grant failed");
    let store = open(&dsn_with_user(&dsn, "cairnq_noddl"), &schema).await.expect("a role that may read connects");

    let claims = Arc::new(AtomicUsize::new(0));
    let issues = Arc::new(Mutex::new(Vec::new()));
    let counted = claims.clone();
    let store = Forwarding(CountingStore {
        inner: Arc::new(store),
        on_claim: Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }),
    });
    let seen = issues.clone();
    let options = WorkerOptions::new()
        .poll_interval(POLL)
        .on_error(move |issue: WorkerIssue| seen.lock().expect("issues").push(issue.to_string()));
    let mut worker = Worker::new(CairnQ::new(store), options).expect("worker");
    worker
        .task("work", |_ctx: TaskContext, _payload: Value| async move { Ok::<_, TaskError>(Value::Null) })
        .expect("register");
    let ran = tokio::time::timeout(Duration::from_secs(10), worker.run()).await;
    let issues = issues.lock().expect("issues").clone();
    let claims = claims.load(Ordering::SeqCst);
    eprintln!("postgres, no write privilege: {claims} claim attempt(s), issues {issues:?}, run {ran:?}");

    let error = ran.expect("the worker stopped by itself").expect_err("run returns the error");
    assert!(error.is_unusable(), "{error}");
    let shown = error.to_string();
    assert!(
        shown.starts_with("unusable database: permission denied for table cairnq_tasks (SQLSTATE 42501"),
        "{shown}"
    );
    assert_eq!(claims, 1, "a claim that cannot heal was tried again");
    assert_eq!(issues.len(), 1, "reported once: {issues:?}");
    assert!(issues[0].contains("so the worker stops"), "{}", issues[0]);
    let row = admin.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((row.status, row.attempt), (TaskStatus::Queued, 0), "nothing was written");
    admin.close().await.expect("close");
}

/// A store passing every call to `inner`, calling `on_claim` before each
/// claim attempt.
struct CountingStore {
    inner: Arc<dyn Store>,
    on_claim: Box<dyn Fn() + Send + Sync>,
}

#[async_trait]
impl Forward for CountingStore {
    fn inner(&self) -> &dyn Store {
        self.inner.as_ref()
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        (self.on_claim)();
        self.inner.claim(params).await
    }
}
