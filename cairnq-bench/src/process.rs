//! The bench's process plumbing: the second process some workloads need
//! (the [`crate::child`] protocol's child, run by the bench binary itself
//! so it is built like the bench) and this process's CPU time.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cairnq_core::{Error, Result};

use cairnq_testkit::child::{ChildArgs, ChildMode, ChildProcess};
use cairnq_testkit::{FreshStore, StoreLocator};

/// The bench binary's first argument that makes it the child process (the
/// rest are [`ChildArgs`]).
pub const CHILD_FLAG: &str = "--child";

/// How a second process opens the fresh store, or why it cannot.
pub(super) fn locator_of(fresh: &FreshStore) -> Result<&StoreLocator> {
    fresh
        .locator
        .as_ref()
        .ok_or_else(|| Error::validation("backend", "this workload needs a store another process can open (a locator)"))
}

/// A `noop` worker of concurrency 8 in another process, with the worker's
/// default lease and poll (what an application gets); with `stop_after`,
/// it drains that many tasks, reports its peak RSS and ends.
pub(super) fn spawn_noop_worker(exe: &Path, locator: &StoreLocator, stop_after: Option<usize>) -> Result<ChildProcess> {
    let mut args = ChildArgs::new(locator.clone(), ChildMode::Noop);
    (args.concurrency, args.lease_ms, args.poll_ms) = (8, 30_000, 500);
    args.stop_after = stop_after.map(|n| n as u64);
    args.report_rss = stop_after.is_some();
    let mut command = Command::new(exe);
    command.arg(CHILD_FLAG);
    ChildProcess::spawn_via(command, &args).map_err(|e| Error::storage("cannot start a bench child process", e))
}

/// The peak RSS (KiB) the draining child reports as it ends.
pub(super) async fn peak_rss_of_drain(child: &mut ChildProcess) -> Result<f64> {
    let line = child.line_starting("peak_rss_kb ", Duration::from_secs(900)).await;
    let line = line.map_err(|e| Error::storage("the draining child reported no RSS", e))?;
    let status = child.wait(Duration::from_secs(60)).await.map_err(|e| Error::storage("the draining child", e))?;
    let rest = child.rest().await;
    if !status.success() {
        return Err(Error::validation("worker_rss", format!("the draining child failed ({status}): {rest:?}")));
    }
    line["peak_rss_kb ".len()..]
        .trim()
        .parse()
        .map_err(|_| Error::validation("worker_rss", format!("the child reported {line:?}")))
}

/// CPU seconds of this process: its threads' scheduler time, else the
/// user + system ticks of /proc/self/stat.
pub(super) fn process_cpu_seconds() -> f64 {
    threads_cpu_seconds().unwrap_or_else(ticked_cpu_seconds)
}

/// The scheduler's own count (nanoseconds on a CPU) summed over this
/// process's live threads: exact, where utime/stime are sampled in 10 ms
/// ticks, too coarse for an idle worker's few milliseconds a second.
fn threads_cpu_seconds() -> Option<f64> {
    let mut total_ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let schedstat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total_ns += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total_ns as f64 / 1e9)
}

/// User + system CPU seconds from /proc/self/stat (10 ms ticks).
fn ticked_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}
