//! A fleet of `cairnq worker --exec` processes, as a deployment runs them
//! behind a connection pooler (issue 29's acceptance): each worker logs to
//! a file of its own, every command it runs appends its task's id to one
//! shared file (so a test counts runs, not just rows), and stopping the
//! fleet drains each worker with SIGTERM and checks it exited 0 and logged
//! no error or warning.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, TaskStatus};

use crate::support::Cli;

/// Far longer than any drain here takes on a loaded machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(90);

/// Worker processes and their logs. Dropping a fleet that was not
/// [`stop`](Fleet::stop)ped kills its processes.
pub(crate) struct Fleet {
    workers: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Fleet {
    /// Starts `count` `cairnq worker --exec` processes of `cli` with
    /// `args` (after `worker`), each command recording its task's id and
    /// answering with its payload as the result.
    pub(crate) fn start(cli: &Cli, count: usize, global: &[&str], args: &[&str]) -> Self {
        Self::start_pausing(cli, count, global, args, Duration::ZERO)
    }

    /// [`start`](Self::start) with commands that first sleep `pause`.
    pub(crate) fn start_pausing(cli: &Cli, count: usize, global: &[&str], args: &[&str], pause: Duration) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let runs = dir.path().join("runs");
        // One short line per append (O_APPEND): whole lines, whoever writes.
        let mut command = format!("echo \"$CAIRNQ_TASK_ID\" >> '{}'; cat", runs.display());
        if !pause.is_zero() {
            command = format!("sleep {}; {command}", pause.as_secs_f64());
        }
        let workers = (0..count)
            .map(|n| {
                let log = std::fs::File::create(dir.path().join(format!("worker-{n}.log"))).expect("a log file");
                let mut all: Vec<&str> = global.to_vec();
                all.extend(["worker", "--exec", &command]);
                all.extend(args);
                cli.command(&all).stdout(Stdio::null()).stderr(log).spawn().expect("start cairnq worker")
            })
            .collect();
        Self { workers, dir }
    }

    /// Each worker's log so far.
    pub(crate) fn logs(&self) -> Vec<String> {
        (0..self.workers.len()).map(|n| std::fs::read_to_string(self.log_path(n)).unwrap_or_default()).collect()
    }

    fn log_path(&self, n: usize) -> PathBuf {
        self.dir.path().join(format!("worker-{n}.log"))
    }

    /// How often each task's command ran, by task id.
    pub(crate) fn runs(&self) -> HashMap<String, usize> {
        let text = std::fs::read_to_string(self.dir.path().join("runs")).unwrap_or_default();
        let mut runs = HashMap::new();
        for id in text.lines() {
            *runs.entry(id.to_string()).or_insert(0) += 1;
        }
        runs
    }

    /// Panics, with the logs, when a worker has ended on its own.
    fn check_running(&mut self) {
        for n in 0..self.workers.len() {
            if let Some(status) = self.workers[n].try_wait().expect("poll a worker") {
                panic!("worker {n} ended ({status}) while it should run: {}", self.logs()[n]);
            }
        }
    }

    /// Polls `done` every 200 ms while the fleet runs, until it is true;
    /// panics with the workers' logs after [`PATIENCE`] or when a worker
    /// ends.
    pub(crate) async fn until<F, Fut>(&mut self, what: &str, mut done: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let start = Instant::now();
        while !done().await {
            self.check_running();
            assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}; the logs: {:#?}", self.logs());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGTERMs every worker (each drains), waits for each, and checks
    /// that each exited 0 with a clean log. Returns the logs.
    pub(crate) fn stop(self) -> Vec<String> {
        let logs = self.drain();
        logs.iter().for_each(|log| assert_clean(log));
        logs
    }

    /// SIGTERMs every worker (each drains), waits for each, and checks
    /// that each exited 0. Returns the logs.
    pub(crate) fn drain(mut self) -> Vec<String> {
        for worker in &self.workers {
            let pid = worker.id().to_string();
            assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
        }
        let statuses: Vec<_> = self.workers.iter_mut().map(|w| w.wait().expect("the worker exits")).collect();
        let logs = self.logs();
        for (n, (status, log)) in statuses.iter().zip(&logs).enumerate() {
            assert!(status.success(), "worker {n} exited {status}: {log}");
        }
        logs
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for worker in &mut self.workers {
            if worker.try_wait().ok().flatten().is_none() {
                let _ = worker.kill();
                let _ = worker.wait();
            }
        }
    }
}

/// What a worker in pooler mode without `--listen-url` says once at its
/// start: that it polls. Expected there, and checked by the tests that
/// expect it; the worker logs it as a warning about lost push wakeups.
pub(crate) const POLLS_NOTICE: &str = "LISTEN cannot reach Postgres through a transaction pooler";

/// A worker log with nothing gone wrong: no line at level ERROR or WARN,
/// none that says "error" at all (a failed store call, a prepared
/// statement the pooler lost, a settle refused), [`POLLS_NOTICE`] aside.
pub(crate) fn assert_clean(log: &str) {
    let bad: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains(POLLS_NOTICE))
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.to_lowercase().contains("error"))
        .collect();
    assert!(bad.is_empty(), "the worker logged what went wrong: {bad:#?}\nthe whole log:\n{log}");
}

/// The number of tasks of `queue` in `status`.
pub(crate) async fn count(client: &CairnQ, queue: &str, status: TaskStatus) -> u64 {
    client.stats(Some(queue)).await.expect("stats").get(queue).map_or(0, |c| c.get(status))
}
