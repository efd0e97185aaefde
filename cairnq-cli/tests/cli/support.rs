//! Running the binary, and the databases the tests run it against.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, ErrorEnvelope, Task, WorkerSession};
use cairnq_postgres::PostgresOptions;
use cairnq_sqlite::SqliteStore;
use serde_json::Value;

/// The built binary.
pub(crate) fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_cairnq")
}

/// What one run of the binary did.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Ran {
    pub(crate) fn from(output: Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// stdout as JSON, after checking the run succeeded.
    pub(crate) fn json(&self) -> Value {
        assert_eq!(self.code, 0, "failed: {}", self.stderr);
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    /// Checks a refused run: `code`, nothing on stdout, one line on stderr
    /// holding `says`.
    pub(crate) fn refused(&self, code: i32, says: &str) {
        assert_eq!(self.code, code, "exit code; stderr: {}", self.stderr);
        assert_eq!(self.stdout, "", "stdout must carry nothing on failure");
        assert_eq!(self.stderr.lines().count(), 1, "one line on stderr: {:?}", self.stderr);
        assert!(self.stderr.starts_with("cairnq: "), "{}", self.stderr);
        assert!(self.stderr.contains(says), "{:?} does not say {says:?}", self.stderr);
    }
}

/// The binary pointed at one database.
#[derive(Debug, Clone)]
pub(crate) struct Cli {
    pub(crate) db: String,
    pub(crate) schema: Option<String>,
}

impl Cli {
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command.env("CAIRNQ_DB", &self.db).env("NO_COLOR", "1");
        if let Some(schema) = &self.schema {
            command.args(["--schema", schema]);
        }
        command.args(args).stdin(Stdio::null());
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> Ran {
        Ran::from(self.command(args).output().expect("run cairnq"))
    }

    /// Runs with `input` on stdin.
    pub(crate) fn run_with_stdin(&self, args: &[&str], input: &str) -> Ran {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run");
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
        Ran::from(child.wait_with_output().expect("wait"))
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        self.run(args).json()
    }
}

/// A database the tests use through the binary and the library at once.
pub(crate) struct Fixture {
    pub(crate) cli: Cli,
    pub(crate) client: CairnQ,
    /// Keeps the SQLite file's directory alive.
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// A fresh SQLite file.
    pub(crate) async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("queue.db");
        let client = CairnQ::new(SqliteStore::open(&path).await.expect("open"));
        Self { cli: Cli { db: path_text(&path), schema: None }, client, _dir: Some(dir) }
    }

    /// A fresh schema on the test Postgres server.
    pub(crate) async fn postgres() -> Self {
        let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
        let schema = cairnq_testkit::postgres::fresh_schema_name();
        let store =
            cairnq_postgres::PostgresStore::connect_with(&dsn, PostgresOptions::new().schema(&schema).pool_size(2))
                .await
                .expect("connect");
        Self { cli: Cli { db: dsn, schema: Some(schema) }, client: CairnQ::new(store), _dir: None }
    }

    /// A fresh database of its own on the test Postgres server (no schema
    /// option): the only installation in it. Dropped with [`drop_database`](Self::drop_database).
    pub(crate) async fn postgres_database() -> (Self, String) {
        let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
        let database = cairnq_testkit::postgres::fresh_schema_name();
        cairnq_testkit::postgres::raw(&dsn)
            .await
            .batch_execute(&format!("create database {database}"))
            .await
            .expect("create database");
        let own = cairnq_testkit::postgres::dsn_with_database(&dsn, &database);
        let store = cairnq_postgres::PostgresStore::connect_with(&own, PostgresOptions::new().pool_size(2))
            .await
            .expect("connect");
        (Self { cli: Cli { db: own, schema: None }, client: CairnQ::new(store), _dir: None }, database)
    }

    /// Drops a database [`postgres_database`](Self::postgres_database) made.
    pub(crate) async fn drop_database(self, database: &str) {
        let _ = self.client.close().await;
        let dsn = cairnq_testkit::postgres::test_dsn().expect("the test Postgres server");
        let drop = format!("drop database {database} with (force)");
        cairnq_testkit::postgres::raw(&dsn).await.batch_execute(&drop).await.expect("drop database");
    }

    /// Rewrites a task's creation and due times (epoch ms), as if it had
    /// been submitted then: what waiting for hours looks like, without
    /// waiting. Raw SQL on either backend.
    pub(crate) async fn set_times(&self, id: &str, created_at_ms: i64, run_at_ms: i64) {
        let sql = format!(
            "update cairnq_tasks set created_at_ms = {created_at_ms}, run_at_ms = {run_at_ms} where id = '{id}'"
        );
        self.raw_sql(&sql).await;
    }

    /// Runs `sql` beside the library: on the SQLite file, or in the
    /// fixture's Postgres schema.
    pub(crate) async fn raw_sql(&self, sql: &str) {
        if self.cli.db.starts_with("postgres") {
            let session = cairnq_testkit::postgres::raw(&self.cli.db).await;
            let schema = self.cli.schema.as_deref().map_or(String::new(), |s| format!("set search_path to {s}; "));
            session.batch_execute(&format!("{schema}{sql}")).await.expect("raw SQL");
        } else {
            let conn = cairnq_sqlite::rusqlite::Connection::open(&self.cli.db).expect("open");
            conn.execute_batch(sql).expect("raw SQL");
        }
    }

    /// The lease holder the fixture claims and settles as.
    fn worker(&self) -> WorkerSession {
        self.client.worker_session("worker_test", std::time::Duration::from_secs(30)).expect("a session")
    }

    /// Claims `task` (and whatever else of its name and queue is due) as a
    /// worker would.
    async fn claim_like(&self, task: &Task) -> Vec<Task> {
        let draw = ClaimDraw::new(vec![task.queue.clone()]).names(vec![task.name.clone()]).limit(100);
        let claimed = self.worker().claim(vec![draw], vec![]).await.expect("claim");
        assert!(claimed.iter().any(|t| t.id == task.id), "claimed {}", task.id);
        claimed
    }

    /// Claims `task` and fails it for good (as a worker would).
    pub(crate) async fn fail(&self, task: &Task) {
        for claimed in self.claim_like(task).await {
            let envelope = ErrorEnvelope::new("boom", format!("failed {}", claimed.id));
            self.worker().fail(&claimed.id, envelope.to_json(), None).await.expect("fail");
        }
    }

    /// Claims `task` and completes it with `{"ok": true}`.
    pub(crate) async fn succeed(&self, task: &Task) {
        for claimed in self.claim_like(task).await {
            self.worker().complete(&claimed.id, serde_json::json!({"ok": true})).await.expect("complete");
        }
    }
}

pub(crate) fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The Python peer script of the cross-language tests.
pub(crate) fn peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cairnq-testkit/interop/peer.py")
}

/// The interpreter with the Python SDK: CAIRNQ_PYTHON, else the workspace's `.venv`.
pub(crate) fn python() -> PathBuf {
    std::env::var_os("CAIRNQ_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"))
}

/// Runs the Python peer and returns the JSON it printed.
pub(crate) fn peer(args: &[&str]) -> Value {
    let output = Command::new(python()).arg(peer_script()).args(args).output().expect("run the Python peer");
    assert!(output.status.success(), "peer {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("null")).expect("peer JSON")
}

/// A value as JSON, for comparing with the binary's output.
pub(crate) fn as_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serialize")
}

/// A plain HTTP/1.1 GET, as a script would send it; the body of a 200.
pub(crate) fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The address a child announced on stderr as `... http://ADDR/...`.
pub(crate) fn announced_addr(stderr: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    while !line.contains("http://") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read stderr") > 0, "the child ended without an address");
    }
    line.split("http://").nth(1).and_then(|rest| rest.split('/').next()).expect("an address").to_string()
}
