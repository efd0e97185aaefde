//! Shared plumbing of the cross-language tests: running the Python peer and
//! comparing its view of a task with ours, column by column.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cairnq_core::Task;
use serde_json::Value;

/// The interpreter that has the peer SDK: CAIRNQ_PYTHON (set by `cargo xtask
/// test`), else the workspace's `.venv`.
fn python() -> PathBuf {
    if let Ok(python) = std::env::var("CAIRNQ_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        venv.exists(),
        "the Python peer SDK is not provisioned: run `cargo xtask test`, or set CAIRNQ_PYTHON to a python with cairnq==0.15.1"
    );
    venv
}

/// How long one peer command may take before the test gives up on it: the
/// peer SDK can hang on an error (its worker thread keeps the process up).
const PEER_TIMEOUT: Duration = Duration::from_secs(180);

fn run_peer(args: &[&str]) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/peer.py");
    let child = Command::new(python())
        .arg(&script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the Python peer");
    let pid = child.id();
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match outcome.recv_timeout(PEER_TIMEOUT) {
        Ok(output) => output.expect("wait for the Python peer"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            let output = outcome.recv().expect("the killed peer").expect("wait for the Python peer");
            panic!("peer {args:?} hung for {PEER_TIMEOUT:?}: {}", String::from_utf8_lossy(&output.stderr));
        }
    }
}

/// A peer running in the background whose stdout lines are read as it
/// prints them, so a test can act on what the peer has done so far.
pub(crate) struct RunningPeer {
    child: std::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// Starts `interop/peer.py` with `args` in the background.
pub(crate) fn spawn_peer(args: &[&str]) -> RunningPeer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/peer.py");
    let mut child = Command::new(python())
        .arg(&script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python peer");
    let stdout = child.stdout.take().expect("the peer's stdout");
    let (send, lines) = tokio::sync::mpsc::unbounded_channel();
    // A thread of its own: reading a pipe blocks, and the test's runtime
    // must stay free.
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    RunningPeer { child, lines }
}

impl RunningPeer {
    /// The next line the peer prints, as JSON; `None` once it has exited.
    /// Fails the test when the peer prints nothing for `PEER_TIMEOUT`.
    async fn next_line(&mut self) -> Option<Value> {
        match tokio::time::timeout(PEER_TIMEOUT, self.lines.recv()).await {
            Ok(line) => line.map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))),
            Err(_) => panic!("the peer printed nothing for {PEER_TIMEOUT:?}"),
        }
    }

    /// The next line the peer prints, as JSON (the peer must still run).
    pub(crate) async fn next_json(&mut self) -> Value {
        match self.next_line().await {
            Some(line) => line,
            None => panic!("the peer exited early: {}", self.stderr()),
        }
    }

    /// Waits for the peer to exit successfully and returns every line it
    /// printed after the ones already read, as JSON.
    pub(crate) async fn finish(mut self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Some(line) = self.next_line().await {
            rest.push(line);
        }
        let status = tokio::task::block_in_place(|| self.child.wait()).expect("wait for the Python peer");
        assert!(status.success(), "peer failed: {}", self.stderr());
        rest
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = tokio::task::block_in_place(|| std::io::Read::read_to_string(&mut stderr, &mut text));
        }
        text
    }
}

impl Drop for RunningPeer {
    /// A test that fails half-way leaves no peer behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `interop/peer.py` with `args` and returns the JSON it printed.
pub(crate) fn peer(args: &[&str]) -> Value {
    let output = run_peer(args);
    assert!(
        output.status.success(),
        "peer {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or("null");
    // Through Json, which reads as deep as the peer writes (serde_json
    // alone stops at 128 levels).
    let parsed = cairnq_core::Json::parse(last.to_string()).and_then(|json| json.decode());
    parsed.unwrap_or_else(|e| panic!("peer printed no JSON ({e}): {stdout}"))
}

/// Runs `interop/peer.py` with `args`, which must fail, and returns its
/// stderr (e.g. the Python exception it raised).
pub(crate) fn peer_error(args: &[&str]) -> String {
    let output = run_peer(args);
    assert!(!output.status.success(), "peer {args:?} succeeded: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts that every column of `ours` equals the Python peer's view of the
/// same row (numbers compare by value: SQLite may hand back 1 for 1.0).
pub(crate) fn python_task_matches(ours: &Task, theirs: &Value) {
    let ours = serde_json::to_value(ours).expect("task serializes");
    let (Value::Object(ours), Value::Object(theirs)) = (&ours, theirs) else {
        panic!("expected two task objects, got {ours} and {theirs}");
    };
    let mut columns: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    columns.sort();
    columns.dedup();
    for column in columns {
        let (a, b) = (&ours.get(column), &theirs.get(column));
        let same = match (a, b) {
            (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
            _ => a == b,
        };
        assert!(same, "column {column}: rust {a:?} vs python {b:?}");
    }
}

/// The file names of this SDK's extension migrations (the book's "Schedules" chapter):
/// the only ledger rows Rust adds to a database the Python SDK created, and
/// the only ones Python never applies.
pub(crate) fn extension_migrations(dialect: cairnq_protocol::Dialect) -> Vec<&'static str> {
    cairnq_protocol::migrations(dialect)
        .iter()
        .filter(|m| m.kind == cairnq_protocol::MigrationKind::Extension)
        .map(|m| m.file_name)
        .collect()
}
