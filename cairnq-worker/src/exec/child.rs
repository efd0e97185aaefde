//! The command's processes: `sh -c COMMAND` and its watchdog, together in
//! a process group of their own, so a stop reaches the whole pipeline (and
//! a Ctrl-C meant for the worker does not reach it: the worker drains while
//! it finishes), stopped with SIGTERM, then SIGKILL after a grace period.
//!
//! The worker kills the group whenever the attempt ends: after the shell
//! exits (whatever it left running would otherwise keep the output pipes
//! open and outlive its task) and when the attempt is dropped unfinished
//! (`max_run`, a drain timeout, a stop at once). A worker that dies without
//! a word (SIGKILL, a crash, the OOM killer) cannot, and an orphaned
//! command would run on past its lease, beside its own retry. So the
//! group's first member is a watchdog: a shell blocked reading a pipe whose
//! only writer is the worker. The kernel closes that writer when the worker
//! dies, however it dies; the watchdog then reads an end of file and
//! SIGKILLs its group, command and all, at once. The worker's end is
//! close-on-exec, so no command inherits it: a process forked meanwhile
//! holds it only until its own exec.
//!
//! The payload goes to the command as a file, written whole before the
//! command starts: a payload still streaming through a pipe when the worker
//! died would reach the command cut short, and it would run on that.

use std::future::Future;
use std::io::{self, PipeWriter, Seek, Write};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use cairnq_core::Json;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};

use super::ExecOptions;
use crate::context::TaskContext;

/// The watchdog: ignores the signals meant for the command (a cancel's
/// SIGTERM, a `kill 0` of the command's own, a terminal's), waits for the
/// end of file on stdin (nothing is ever written), then kills its group.
const WATCHDOG: &str = "trap '' HUP INT QUIT TERM; read -r _; kill -s KILL 0";

/// Starts `command` for the task of `ctx`: the watchdog first, leading a
/// new process group, then `sh -c command` in that group, the payload file
/// on its stdin, stdout and stderr piped, the task's identity in the
/// environment.
pub(super) async fn spawn(
    command: &str,
    options: &ExecOptions,
    ctx: &TaskContext,
) -> io::Result<(Child, ProcessGroup)> {
    let payload = payload_file(ctx.payload_json().clone()).await?;
    let group = ProcessGroup::start()?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(payload)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(Pid::as_raw(group.pgid))
        .env("CAIRNQ_TASK_ID", ctx.task_id())
        .env("CAIRNQ_TASK_NAME", ctx.name())
        .env("CAIRNQ_ATTEMPT", ctx.attempt().to_string())
        .env("CAIRNQ_QUEUE", ctx.queue());
    if let Some(dir) = &options.current_dir {
        cmd.current_dir(dir);
    }
    // On an error the group drops, and its watchdog is killed.
    let child = cmd.spawn()?;
    Ok((child, group))
}

/// The payload in an anonymous temporary file (gone once closed), read
/// from its start. Written on a blocking thread: it is file I/O, and a
/// payload may be megabytes.
async fn payload_file(payload: Json) -> io::Result<std::fs::File> {
    let write = move || {
        let mut file = tempfile::tempfile()?;
        file.write_all(payload.as_str().as_bytes())?;
        file.rewind()?;
        Ok(file)
    };
    tokio::task::spawn_blocking(write).await.map_err(io::Error::other)?
}

/// The command's process group, led by its watchdog; killed when dropped
/// unless it finished.
#[derive(Debug)]
pub(super) struct ProcessGroup {
    /// The watchdog's pid, which is the group's id. `None` once finished.
    /// While the watchdog is not reaped (it is only in [`finish`](Self::finish),
    /// after this is cleared), no new process or group can take the id, so
    /// a signal never reaches a stranger.
    pgid: Option<Pid>,
    watchdog: Option<Child>,
    /// The worker's end of the watchdog's pipe: closed, by the kernel when
    /// the worker dies or here when the group is done, it lets the
    /// watchdog kill the group.
    lifeline: Option<PipeWriter>,
}

impl ProcessGroup {
    /// Starts the watchdog in a group of its own.
    fn start() -> io::Result<Self> {
        // Both ends close-on-exec: only the watchdog's stdin (a copy made
        // for it) survives into a command.
        let (watched, lifeline) = io::pipe()?;
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .stdin(watched)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pgid = watchdog.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
        let group = Self { pgid, watchdog: Some(watchdog), lifeline: Some(lifeline) };
        match group.pgid {
            Some(_) => Ok(group),
            None => Err(io::Error::other("the watchdog of the command exited as it started")),
        }
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (every member gone) is a harmless answer.
            let _ = kill_process_group(pgid, signal);
        }
    }

    /// The shell exited: kill what it left behind and the watchdog, and
    /// reap the watchdog.
    async fn finish(&mut self) {
        self.signal(Signal::KILL);
        self.pgid = None;
        self.lifeline = None;
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.wait().await;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // An unreaped watchdog left here is reaped by tokio in the background.
        self.signal(Signal::KILL);
    }
}

/// Waits for the shell to exit. When `stop` resolves first, the group gets
/// SIGTERM, and SIGKILL if the shell is still there `grace` later; the
/// reason is returned with the exit status.
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
    group.finish().await;
    (status, reason)
}
