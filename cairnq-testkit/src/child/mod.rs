//! The one child-process protocol of the tests and benchmarks: a process
//! that opens the store a [`StoreLocator`] names and plays one role — a
//! worker, a submitter, an opener — saying what it does in stdout lines a
//! parent reads through [`ChildProcess`].
//!
//! Killing a real process is the only honest way to test what a crash does
//! to leases and acknowledged writes, and another process is the only
//! honest way to test cross-process wakeups and file permissions, so every
//! test that needs one starts this child, from the `cairnq-test-worker`
//! binary (or a binary embedding [`main`], as `cairnq-bench --child` does).
//!
//! ```text
//! cairnq-test-worker (--sqlite PATH | --postgres DSN SCHEMA) --mode MODE
//!                    [--lease-ms N] [--drain-ms N] [--concurrency N] [--poll-ms N] [--no-listen]
//!                    [--on-unusable stop|keep] [--report-issues] [--report-claims]
//!                    [--stop-after N] [--report-rss] [--report-spans] [--log PATH] [--schedule NAME=SPEC]
//! ```
//!
//! Worker modes (a worker with one handler; it prints `ready <pid> <worker
//! id>` just before it runs, and runs until SIGINT/SIGTERM, then drains):
//!
//! - `hang`: handler `crash` prints `started <task id>` and never returns.
//! - `sleep`: handler `sleep` sleeps `payload.ms` milliseconds and returns
//!   `{"slept": ms}`.
//! - `noop`: handler `noop` returns `null`.
//! - `record` (needs `--log`): handler `record` keeps an account of every run
//!   in the log file, so a test that SIGKILLs workers can tell afterwards
//!   which runs happened and who cut them short (see [`RecordLine`]). It
//!   appends `start <task id> <attempt> <worker id> <epoch ms>`, sleeps
//!   `payload.ms`, appends `end <task id> <attempt> <worker id> <epoch ms>`,
//!   and returns
//!   `{"worker": <worker id>, "pid": <pid>, "attempt": <attempt>}`. The log
//!   opens with `child <pid> <worker id>` and gets an `issue <text>` line per
//!   [`WorkerIssue`](cairnq_worker::WorkerIssue). Each line is one
//!   unbuffered `write`, so it is in the kernel before the handler goes on
//!   and a SIGKILL cannot take it back.
//! - `settle-in`: handler `settle_in` writes a row `(task id, attempt,
//!   worker id)` to the application's table `app_rows` (the test creates it
//!   with [`APP_TABLE`]) and settles the task in the same transaction
//!   (`succeed_in` on Postgres, `succeed_with` on SQLite), returning
//!   `{"attempt": <attempt>, "worker": <worker id>}`. On attempt 1 with
//!   `payload.hold_first_ms` it prints `holding <task id>` after the writes
//!   and waits that long before the commit: the window to kill it in.
//! - `fan-out` (needs `--log`): handlers `fan_split`, `fan_part` and
//!   `fan_join` of a fan-out (see [`fan_out`]): the split prints
//!   `splitting <task id> <attempt>` before it fans out, the join logs its
//!   runs as `record` does.
//!
//! With `--report-issues` every worker issue prints as `issue <text>`; with
//! `--report-claims` every claim attempt prints `claim` before it is made.
//! `--stop-after N` stops the worker once its handler ran N times and the
//! store holds N succeeded tasks; `--report-rss` prints `peak_rss_kb <KiB>`
//! as the process ends. With `--report-spans` a `tracing` subscriber
//! records spans and every `process` span prints as `span <JSON>` (a
//! [`RecordedSpan`](crate::telemetry::RecordedSpan)) as it closes. A Postgres store opened with `--no-listen` has no
//! LISTEN connection, so the worker finds tasks by polling every
//! `--poll-ms` only.
//!
//! `--schedule NAME=SPEC` declares a schedule on the worker that fires the
//! mode's handler name on SPEC (checked every 250 ms): the schedule tests
//! run several such processes on one database.
//!
//! Client modes (no worker):
//!
//! - `open`: opens the store and prints `opened`, or `open_error <error>`
//!   when it cannot (and still ends `exit ok`: the report is the result).
//! - `submit-burst`: eight concurrent submitters (so writes share commits)
//!   submit `burst` tasks until the process is killed, printing `ack <task
//!   id>` as soon as each submit returned.
//! - `submit-on-go`: prints `opened`, submits one `ping` task when a line
//!   arrives on stdin, prints `ack <task id>`, and ends when stdin closes.
//!
//! Every run ends with `exit ok` (exit code 0) or `exit err <error>` (exit
//! code 1) on stdout.

pub mod fan_out;
mod process;
mod record;
mod run;
mod settle_in;

use std::path::PathBuf;

pub use process::{ChildProcess, child_binary, signal};
pub use record::RecordLine;
pub use run::{main, open_store, run_child};
pub use settle_in::APP_TABLE;

use crate::StoreLocator;

/// What the child does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildMode {
    /// A worker whose `crash` handler announces the start, then never returns.
    Hang,
    /// A worker whose `sleep` handler sleeps `payload.ms`, then succeeds.
    Sleep,
    /// A worker whose `noop` handler returns `null`.
    Noop,
    /// A worker whose `record` handler logs the run's start and end around
    /// a `payload.ms` sleep, then succeeds naming the worker.
    Record,
    /// A worker whose `settle_in` handler writes an application row and
    /// settles in the same transaction, holding it open on attempt 1 when
    /// told to.
    SettleIn,
    /// A worker whose handlers fan out (`fan_split`), run the parts
    /// (`fan_part`) and join them (`fan_join`, logged as `record` logs).
    FanOut,
    /// Open the store, report how that went, end.
    Open,
    /// Submit from eight tasks at once until killed, acknowledging each.
    SubmitBurst,
    /// Submit one task when told to on stdin.
    SubmitOnGo,
}

const MODES: &[(ChildMode, &str)] = &[
    (ChildMode::Hang, "hang"),
    (ChildMode::Sleep, "sleep"),
    (ChildMode::Noop, "noop"),
    (ChildMode::Record, "record"),
    (ChildMode::SettleIn, "settle-in"),
    (ChildMode::FanOut, "fan-out"),
    (ChildMode::Open, "open"),
    (ChildMode::SubmitBurst, "submit-burst"),
    (ChildMode::SubmitOnGo, "submit-on-go"),
];

impl ChildMode {
    /// Whether this mode runs a worker (and takes the worker options).
    pub fn is_worker(self) -> bool {
        matches!(self, Self::Hang | Self::Sleep | Self::Noop | Self::Record | Self::SettleIn | Self::FanOut)
    }

    fn name(self) -> &'static str {
        MODES.iter().find(|(mode, _)| *mode == self).map_or("?", |(_, name)| name)
    }

    fn parse(name: &str) -> Result<Self, String> {
        MODES.iter().find(|(_, n)| *n == name).map(|(mode, _)| *mode).ok_or_else(|| format!("unknown mode {name:?}"))
    }
}

/// The child's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildArgs {
    /// The database to open.
    pub locator: StoreLocator,
    /// What to do.
    pub mode: ChildMode,
    /// Lease length.
    pub lease_ms: u64,
    /// Drain timeout on SIGTERM.
    pub drain_ms: u64,
    /// Worker concurrency.
    pub concurrency: usize,
    /// The worker's poll interval.
    pub poll_ms: u64,
    /// Whether a Postgres store holds a LISTEN connection (push wakeups).
    pub listen: bool,
    /// Keep retrying (with backoff) on an unusable store instead of
    /// stopping, the worker's default.
    pub keep_retrying: bool,
    /// Print every worker issue as an `issue <text>` stdout line.
    pub report_issues: bool,
    /// Print `claim` before every claim attempt.
    pub report_claims: bool,
    /// Stop once the handler ran this many times and as many tasks
    /// succeeded.
    pub stop_after: Option<u64>,
    /// Print `peak_rss_kb <KiB>` at the end.
    pub report_rss: bool,
    /// Print every closed `process` span as `span <JSON>`.
    pub report_spans: bool,
    /// The run log of [`ChildMode::Record`] (appended to, created if absent).
    pub log: Option<PathBuf>,
    /// A schedule the worker declares, as `NAME=SPEC`, firing the mode's
    /// handler name.
    pub schedule: Option<String>,
}

impl ChildArgs {
    /// Defaults: lease 1 s, drain 1 s, concurrency 1, poll every 50 ms,
    /// push wakeups on, stop on an unusable store, nothing extra reported,
    /// no log.
    pub fn new(locator: StoreLocator, mode: ChildMode) -> Self {
        Self {
            locator,
            mode,
            lease_ms: 1_000,
            drain_ms: 1_000,
            concurrency: 1,
            poll_ms: 50,
            listen: true,
            keep_retrying: false,
            report_issues: false,
            report_claims: false,
            stop_after: None,
            report_rss: false,
            report_spans: false,
            log: None,
            schedule: None,
        }
    }

    /// As command-line arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = match &self.locator {
            StoreLocator::Sqlite { path } => vec!["--sqlite".to_string(), path.display().to_string()],
            StoreLocator::Postgres { dsn, schema } => vec!["--postgres".into(), dsn.clone(), schema.clone()],
        };
        args.extend(["--mode".into(), self.mode.name().into(), "--lease-ms".into(), self.lease_ms.to_string()]);
        args.extend(["--drain-ms".into(), self.drain_ms.to_string()]);
        args.extend(["--concurrency".into(), self.concurrency.to_string()]);
        args.extend(["--poll-ms".into(), self.poll_ms.to_string()]);
        let flags = [
            (!self.listen, "--no-listen"),
            (self.report_issues, "--report-issues"),
            (self.report_claims, "--report-claims"),
            (self.report_rss, "--report-rss"),
            (self.report_spans, "--report-spans"),
        ];
        args.extend(flags.iter().filter(|(on, _)| *on).map(|(_, flag)| flag.to_string()));
        if self.keep_retrying {
            args.extend(["--on-unusable".into(), "keep".into()]);
        }
        if let Some(n) = self.stop_after {
            args.extend(["--stop-after".into(), n.to_string()]);
        }
        if let Some(log) = &self.log {
            args.extend(["--log".into(), log.display().to_string()]);
        }
        if let Some(schedule) = &self.schedule {
            args.extend(["--schedule".into(), schedule.clone()]);
        }
        args
    }

    /// Parses what [`to_args`](Self::to_args) wrote.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut locator = None;
        let mut mode = None;
        let mut parsed = Self::new(StoreLocator::Sqlite { path: PathBuf::new() }, ChildMode::Sleep);
        let mut rest = args.iter();
        while let Some(flag) = rest.next() {
            let mut value = || rest.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--sqlite" => locator = Some(StoreLocator::Sqlite { path: PathBuf::from(value()?) }),
                "--postgres" => locator = Some(StoreLocator::Postgres { dsn: value()?, schema: value()? }),
                "--mode" => mode = Some(ChildMode::parse(&value()?)?),
                "--lease-ms" => parsed.lease_ms = number(flag, &value()?)?,
                "--drain-ms" => parsed.drain_ms = number(flag, &value()?)?,
                "--concurrency" => parsed.concurrency = number(flag, &value()?)?,
                "--poll-ms" => parsed.poll_ms = number(flag, &value()?)?,
                "--no-listen" => parsed.listen = false,
                "--on-unusable" => {
                    parsed.keep_retrying = match value()?.as_str() {
                        "keep" => true,
                        "stop" => false,
                        other => return Err(format!("--on-unusable takes stop or keep, not {other:?}")),
                    }
                }
                "--report-issues" => parsed.report_issues = true,
                "--report-claims" => parsed.report_claims = true,
                "--stop-after" => parsed.stop_after = Some(number(flag, &value()?)?),
                "--report-rss" => parsed.report_rss = true,
                "--report-spans" => parsed.report_spans = true,
                "--log" => parsed.log = Some(PathBuf::from(value()?)),
                "--schedule" => parsed.schedule = Some(value()?),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        parsed.locator = locator.ok_or("--sqlite or --postgres is required")?;
        parsed.mode = mode.ok_or("--mode is required")?;
        if matches!(parsed.mode, ChildMode::Record | ChildMode::FanOut) && parsed.log.is_none() {
            return Err(format!("--mode {} needs --log", parsed.mode.name()));
        }
        Ok(parsed)
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag} needs a number, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_round_trips() {
        let locator = StoreLocator::Postgres { dsn: "postgres://x@h/db".into(), schema: "s".into() };
        let mut args = ChildArgs::new(locator, ChildMode::Hang);
        (args.lease_ms, args.drain_ms, args.concurrency, args.poll_ms) = (7, 8, 9, 5_000);
        (args.listen, args.report_issues, args.log) = (false, true, Some("runs.log".into()));
        args.schedule = Some("tick=@every 1s".into());
        (args.keep_retrying, args.report_claims, args.stop_after, args.report_rss) = (true, true, Some(3), true);
        args.report_spans = true;
        assert_eq!(ChildArgs::parse(&args.to_args()), Ok(args.clone()));
        for &(mode, _) in MODES {
            args.mode = mode;
            assert_eq!(ChildArgs::parse(&args.to_args()), Ok(args.clone()));
        }
        args.mode = ChildMode::Record;
        args.log = None;
        assert!(ChildArgs::parse(&args.to_args()).is_err(), "record mode needs a log");
        args.mode = ChildMode::FanOut;
        assert!(ChildArgs::parse(&args.to_args()).is_err(), "fan-out mode needs a log");
        let defaults = ChildArgs::new(StoreLocator::Sqlite { path: "q.db".into() }, ChildMode::Sleep);
        assert_eq!(ChildArgs::parse(&defaults.to_args()), Ok(defaults));
        assert!(ChildArgs::parse(&["--poll-ms".into(), "soon".into()]).is_err());
        assert!(ChildArgs::parse(&["--mode".into(), "dance".into()]).is_err());
    }
}
