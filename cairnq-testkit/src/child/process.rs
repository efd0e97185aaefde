//! The parent's side of the protocol: finding or building the child
//! binary, starting it, reading its lines, signalling and reaping it.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use super::ChildArgs;

/// A running child process and its stdout, line by line, each line stamped
/// when it was read. Dropping it SIGKILLs and reaps a child still running,
/// so a failed test leaves no process behind.
#[derive(Debug)]
pub struct ChildProcess {
    process: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<(Instant, String)>,
    status: Option<ExitStatus>,
}

impl ChildProcess {
    /// Starts the child binary ([`child_binary`]) with `args`.
    pub fn spawn(args: &ChildArgs) -> std::io::Result<Self> {
        let binary = child_binary().map_err(std::io::Error::other)?;
        Self::spawn_via(Command::new(binary), args)
    }

    /// Starts the child binary with `args` as a user file permissions stop
    /// (see [`crate::unprivileged`]); `Ok(None)`, after printing why, when
    /// there is no such user (the caller skips its test).
    #[cfg(unix)]
    pub fn spawn_unprivileged(args: &ChildArgs) -> std::io::Result<Option<Self>> {
        let binary = child_binary().map_err(std::io::Error::other)?;
        match crate::unprivileged::command(&binary) {
            Ok(command) => Self::spawn_via(command, args).map(Some),
            Err(reason) => {
                eprintln!("skipped: {reason}");
                Ok(None)
            }
        }
    }

    /// Starts `command` with `args` appended: the child binary run another
    /// way (as another user through `runuser`, or a binary that embeds
    /// [`main`](super::main) behind an argument of its own).
    pub fn spawn_via(mut command: Command, args: &ChildArgs) -> std::io::Result<Self> {
        command.args(args.to_args()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut process = command.spawn()?;
        let stdout = process.stdout.take().ok_or_else(|| std::io::Error::other("no piped stdout"))?;
        let (sender, lines) = mpsc::unbounded_channel();
        // A thread of its own: reading a pipe blocks.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        Ok(Self { stdin: process.stdin.take(), process, lines, status: None })
    }

    /// The process id (of `runuser`, not the child, when started through
    /// it: the child's own is in its `ready` line).
    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// The next stdout line and when it was read: `TimedOut` after
    /// `within`, `UnexpectedEof` once stdout closed.
    pub async fn next_line(&mut self, within: Duration) -> std::io::Result<(Instant, String)> {
        match tokio::time::timeout(within, self.lines.recv()).await {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the child closed its stdout")),
            Err(_) => Err(std::io::Error::new(ErrorKind::TimedOut, format!("no line from the child in {within:?}"))),
        }
    }

    /// The first line starting with `prefix` (earlier ones are passed
    /// over), within `within` in all.
    pub async fn line_starting(&mut self, prefix: &str, within: Duration) -> std::io::Result<String> {
        let deadline = Instant::now() + within;
        loop {
            let (_, line) = self.next_line(deadline.saturating_duration_since(Instant::now())).await?;
            if line.starts_with(prefix) {
                return Ok(line);
            }
        }
    }

    /// Writes one line to the child's stdin.
    pub fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| std::io::Error::other("stdin is closed"))?;
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }

    /// Closes the child's stdin (a child reading it sees its end).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Sends the signal `name` (`TERM`, `STOP`, ...) to the child.
    pub fn signal(&self, name: &str) -> std::io::Result<()> {
        signal(self.id(), name)
    }

    /// SIGKILL, and reaps the child.
    pub fn kill(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        self.process.kill()?;
        let status = self.process.wait()?;
        self.status = Some(status);
        Ok(status)
    }

    /// The exit status if the child has ended (reaping it).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.process.try_wait()?;
        }
        Ok(self.status)
    }

    /// Waits for the child to end on its own (`TimedOut` after `within`).
    pub async fn wait(&mut self, within: Duration) -> std::io::Result<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::new(ErrorKind::TimedOut, format!("the child still runs after {within:?}")));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Every line the child printed and nobody read yet, up to the end of
    /// its stdout (call once it has ended).
    pub async fn rest(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        while let Ok((_, line)) = self.next_line(Duration::from_secs(30)).await {
            rest.push(line);
        }
        rest
    }

    /// SIGTERM, then waits (`within`) for the child to drain and end, and
    /// returns its status and every line not read yet.
    pub async fn stop(&mut self, within: Duration) -> std::io::Result<(ExitStatus, Vec<String>)> {
        self.signal("TERM")?;
        let status = self.wait(within).await?;
        Ok((status, self.rest().await))
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.process.kill();
            let _ = self.process.wait();
        }
    }
}

/// Sends the signal `name` to process `pid` (through `kill`, so no libc
/// binding is needed).
pub fn signal(pid: u32, name: &str) -> std::io::Result<()> {
    let status = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("kill -{name} {pid} failed: {status}"))) }
}

/// The `cairnq-test-worker` binary: `$CAIRNQ_TEST_WORKER_BIN` when set,
/// else built once per test process with the cargo that runs the tests
/// (dependencies' binaries are not built for another crate's tests), with
/// the backends this testkit was built with.
pub fn child_binary() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    if let Some(path) = std::env::var_os("CAIRNQ_TEST_WORKER_BIN") {
        return Ok(PathBuf::from(path));
    }
    BUILT.get_or_init(build_child_binary).clone()
}

fn build_child_binary() -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    // One binary for every backend of this build: the backends this
    // testkit was built with (its default features hold none).
    let features = [cfg!(feature = "sqlite").then_some("sqlite"), cfg!(feature = "postgres").then_some("postgres")];
    let features = features.into_iter().flatten().collect::<Vec<_>>().join(",");
    let output = Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path", manifest, "--bin", "cairnq-test-worker"])
        .args(["--features", &features, "--message-format", "json"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo to build cairnq-test-worker: {e}"))?;
    if !output.status.success() {
        return Err(format!("building cairnq-test-worker failed: {}", output.status));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["target"]["name"] == "cairnq-test-worker")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo built no cairnq-test-worker executable".to_string())
}
