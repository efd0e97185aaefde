//! One long-running command of `--serve`: `sh -c COMMAND` in a process
//! group watched as a per-task command is (so it dies with its worker
//! however the worker dies), stdin and stdout piped for the
//! line protocol, stderr forwarded line by line to the worker's log with
//! its last lines kept for the error of a command that dies.

use std::collections::VecDeque;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustix::process::Signal;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use super::super::ExecOptions;
use super::super::child::{Gate, Launcher, ProcessGroup};

/// How much of stderr the error of a dying command keeps.
const TAIL_BYTES: usize = 4096;

/// A running command, between tasks or serving one.
#[derive(Debug)]
pub(super) struct Served {
    child: Child,
    group: ProcessGroup,
    stdin: Option<ChildStdin>,
    stdout: Lines,
    stderr: Option<JoinHandle<()>>,
    tail: Arc<Mutex<VecDeque<String>>>,
    pid: u32,
}

/// What reading one line of stdout gave.
#[derive(Debug)]
pub(super) enum Line {
    Text(String),
    /// Longer than the limit: the command is out of step and must go.
    TooLong,
    /// stdout closed: the command ended (or closed it).
    End,
}

impl Served {
    /// Starts the launcher's command (see the module docs).
    pub(super) fn start(launcher: &Launcher, options: &ExecOptions) -> io::Result<Self> {
        let exports = ["CAIRNQ_SERVE=1".to_string()];
        let (mut child, group) = ProcessGroup::spawn(launcher, options, Gate::OwnPipe, Stdio::piped(), &exports)?;
        let pid = child.id().unwrap_or_default();
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = child.stderr.take().map(|pipe| tokio::spawn(forward_stderr(pipe, pid, tail.clone())));
        let limit = usize::try_from(options.max_stdout_bytes).unwrap_or(usize::MAX);
        let stdout = Lines { pipe: child.stdout.take().map(BufReader::new), buf: Vec::new(), limit };
        tracing::info!(target: "cairnq_worker::serve", pid, "started {:?}", launcher.command());
        Ok(Self { stdin: child.stdin.take(), child, group, stdout, stderr, tail, pid })
    }

    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the command already ended (it died between tasks).
    pub(super) fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes `line` to the command's stdin.
    pub(super) async fn send(&mut self, line: &str) -> io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await
    }

    /// The next line of stdout (cancel-safe: a partial line waits in the
    /// buffer for the next call).
    pub(super) async fn next_line(&mut self) -> io::Result<Line> {
        self.stdout.next().await
    }

    /// The command ended (its stdout closed, or it is to be stopped): waits
    /// `grace` for its exit (SIGKILL after), kills what it left in its
    /// group, and returns how it ended with the last line of its stderr.
    pub(super) async fn end(mut self, grace: Duration) -> (io::Result<ExitStatus>, String) {
        self.stdin = None;
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                self.group.signal(Signal::KILL);
                self.child.wait().await
            }
        };
        self.group.finish();
        // Everything in the group is gone, so stderr is at its end: let the
        // forwarder log the last lines before the tail is read.
        if let Some(forwarder) = self.stderr.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), forwarder).await;
        }
        let last = self.tail.lock().iter().rev().map(|l| l.trim()).find(|l| !l.is_empty()).map(str::to_string);
        (status, last.unwrap_or_default())
    }

    /// Stops the command now: SIGKILL to its group, then reaped.
    pub(super) async fn kill(self) -> (io::Result<ExitStatus>, String) {
        self.group.signal(Signal::KILL);
        self.end(Duration::ZERO).await
    }
}

/// stdout split into lines of at most `limit` bytes.
#[derive(Debug)]
struct Lines {
    pipe: Option<BufReader<ChildStdout>>,
    buf: Vec<u8>,
    limit: usize,
}

impl Lines {
    async fn next(&mut self) -> io::Result<Line> {
        let Some(pipe) = self.pipe.as_mut() else { return Ok(Line::End) };
        loop {
            let chunk = pipe.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(Line::End);
            }
            let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (chunk.len(), false),
            };
            self.buf.extend_from_slice(&chunk[..take]);
            pipe.consume(take);
            if self.buf.len() > self.limit.saturating_add(2) {
                self.buf = Vec::new();
                return Ok(Line::TooLong);
            }
            if done {
                let line = std::mem::take(&mut self.buf);
                let text = String::from_utf8_lossy(&line);
                return Ok(Line::Text(text.trim_end_matches(['\n', '\r']).to_string()));
            }
        }
    }
}

/// Logs each stderr line (target `cairnq_worker::serve`, with the
/// command's pid) and keeps the last few KB of them.
async fn forward_stderr(pipe: tokio::process::ChildStderr, pid: u32, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A read error ends stderr like its end does.
        match (&mut lines).take(64 * 1024).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        tracing::info!(target: "cairnq_worker::serve", pid, "stderr: {text}");
        let mut kept = tail.lock();
        kept.push_back(text.to_string());
        while kept.iter().map(String::len).sum::<usize>() > TAIL_BYTES && kept.len() > 1 {
            kept.pop_front();
        }
    }
}
