//! The command's process: started through `sh -c` in a process group of
//! its own, so a stop reaches the whole pipeline (and a Ctrl-C meant for
//! the worker does not reach it: the worker drains while it finishes), and
//! stopped with SIGTERM, then SIGKILL after a grace period.
//!
//! The group is killed whenever the attempt ends: after the shell exits
//! (whatever it left running would otherwise keep the output pipes open and
//! outlive its task) and when the attempt is dropped unfinished (`max_run`,
//! a drain timeout, a stop at once).

use std::future::Future;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};

use super::ExecOptions;
use crate::context::TaskContext;

/// Starts `command` for the task of `ctx`: `sh -c command`, every stream
/// piped, the task's identity in the environment.
pub(super) fn spawn(command: &str, options: &ExecOptions, ctx: &TaskContext) -> io::Result<(Child, ProcessGroup)> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .env("CAIRNQ_TASK_ID", ctx.task_id())
        .env("CAIRNQ_TASK_NAME", ctx.name())
        .env("CAIRNQ_ATTEMPT", ctx.attempt().to_string())
        .env("CAIRNQ_QUEUE", ctx.queue());
    if let Some(dir) = &options.current_dir {
        cmd.current_dir(dir);
    }
    let child = cmd.spawn()?;
    // The shell leads its own group (process_group(0)), so its pid is the
    // group id; a child that already exited has no id, and no group to stop.
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
    Ok((child, ProcessGroup { pgid }))
}

/// The command's process group, killed when dropped unless it finished.
#[derive(Debug)]
pub(super) struct ProcessGroup {
    /// `None` once finished: the id may then be reused by another group.
    pgid: Option<Pid>,
}

impl ProcessGroup {
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (every member gone) is the common, harmless answer.
            let _ = kill_process_group(pgid, signal);
        }
    }

    /// The shell exited: kill what it left behind and forget the group.
    fn finish(&mut self) {
        self.signal(Signal::KILL);
        self.pgid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}

/// Waits for the shell to exit. When `stop` resolves first, the group gets
/// SIGTERM, and SIGKILL if it is still there `grace` later; the reason is
/// returned with the exit status.
pub(super) async fn wait<R>(
    child: &mut Child,
    group: &mut ProcessGroup,
    grace: Duration,
    stop: impl Future<Output = R>,
) -> (io::Result<ExitStatus>, Option<R>) {
    let (status, reason) = tokio::select! {
        status = child.wait() => (status, None),
        reason = stop => {
            group.signal(Signal::TERM);
            let status = match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    group.signal(Signal::KILL);
                    child.wait().await
                }
            };
            (status, Some(reason))
        }
    };
    group.finish();
    (status, reason)
}
