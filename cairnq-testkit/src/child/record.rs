//! The run log of the child's `record` mode: one line per event, written
//! so that a SIGKILL cannot take back a line the handler went on from.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// One line of a [`ChildMode::Record`](super::ChildMode::Record) run log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordLine {
    /// `child <pid> <worker id>`: the process writing this log (first line).
    Child {
        /// Its process id.
        pid: u32,
        /// Its worker id.
        worker: String,
    },
    /// `start <task id> <attempt> <worker id> <epoch ms>`: a handler run
    /// began.
    Start {
        /// The task.
        task: String,
        /// The attempt the claim gave this run.
        attempt: u32,
        /// The worker running it.
        worker: String,
        /// When, by the host's clock.
        at_ms: i64,
    },
    /// `end <task id> <attempt> <worker id> <epoch ms>`: the run's handler
    /// is returning its result (the worker has not settled it yet).
    End {
        /// The task.
        task: String,
        /// The attempt.
        attempt: u32,
        /// The worker.
        worker: String,
        /// When, by the host's clock (so a test can tell which runs
        /// overlapped).
        at_ms: i64,
    },
    /// `issue <text>`: a [`WorkerIssue`](cairnq_worker::WorkerIssue), on one line.
    Issue(String),
}

impl RecordLine {
    /// Parses one line as [`Display`](std::fmt::Display) wrote it.
    pub fn parse(line: &str) -> std::result::Result<Self, String> {
        let bad = || format!("bad run log line {line:?}");
        if let Some(text) = line.strip_prefix("issue ") {
            return Ok(Self::Issue(text.to_string()));
        }
        let fields: Vec<&str> = line.split(' ').collect();
        fn number<T: std::str::FromStr>(text: &str, bad: impl Fn() -> String) -> std::result::Result<T, String> {
            text.parse().map_err(|_| bad())
        }
        match fields[..] {
            ["child", pid, worker] => Ok(Self::Child { pid: number(pid, bad)?, worker: worker.into() }),
            ["start", task, n, worker, at] => Ok(Self::Start {
                task: task.into(),
                attempt: number(n, bad)?,
                worker: worker.into(),
                at_ms: number(at, bad)?,
            }),
            ["end", task, n, worker, at] => Ok(Self::End {
                task: task.into(),
                attempt: number(n, bad)?,
                worker: worker.into(),
                at_ms: number(at, bad)?,
            }),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for RecordLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Child { pid, worker } => write!(f, "child {pid} {worker}"),
            Self::Start { task, attempt, worker, at_ms } => write!(f, "start {task} {attempt} {worker} {at_ms}"),
            Self::End { task, attempt, worker, at_ms } => write!(f, "end {task} {attempt} {worker} {at_ms}"),
            Self::Issue(text) => write!(f, "issue {}", text.replace('\n', " ")),
        }
    }
}

/// The record mode's log: an unbuffered file opened for appending, one
/// `write` per line, so concurrent handlers never interleave within a line
/// and a line written is a line kept, whenever the process is killed.
pub(super) struct RunLog(Mutex<File>);

impl RunLog {
    pub(super) fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self(Mutex::new(File::options().create(true).append(true).open(path)?)))
    }

    pub(super) fn append(&self, line: &RecordLine) -> std::io::Result<()> {
        let mut file = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(format!("{line}\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_log_lines_round_trip() {
        let lines = [
            RecordLine::Child { pid: 42, worker: "worker_A".into() },
            RecordLine::Start { task: "task_B".into(), attempt: 3, worker: "worker_A".into(), at_ms: 1_700 },
            RecordLine::End { task: "task_B".into(), attempt: 3, worker: "worker_A".into(), at_ms: 1_715 },
            RecordLine::Issue("heartbeat failed: x y".into()),
        ];
        for line in lines {
            assert_eq!(RecordLine::parse(&line.to_string()), Ok(line));
        }
        assert!(RecordLine::parse("start task_B three worker_A 1700").is_err());
        assert!(RecordLine::parse("end task_B 3").is_err());
        assert!(RecordLine::parse("end task_B 3 worker_A").is_err(), "an end names its time");
    }
}
