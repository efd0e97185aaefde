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
//! group holds a watchdog: a shell blocked reading a pipe whose only
//! writer is the worker. The kernel closes that writer when the worker
//! dies, however it dies; the watchdog then reads an end of file and
//! SIGKILLs its group, command and all, at once. The worker's end is
//! close-on-exec, so no command inherits it.
//!
//! The watchdog is not a process of its own spawned per task (that doubled
//! the cost of a task, issue 27): the shell that runs the command forks it
//! first ([`WRAPPER`]), so a task costs one spawn, as running the command
//! bare does. The pipe's read end reaches that shell by inheritance (it is
//! the one descriptor left open across the spawn, named by number in the
//! script and opened as `/dev/fd/N`); other commands spawned meanwhile
//! inherit it too, harmlessly: a read end nobody reads keeps nothing open.
//! Forked twice, the watchdog is not a job of the command's shell (a
//! command's own `wait` does not wait for it) and is reaped by init once
//! killed, so the worker should not be PID 1 without an init that reaps
//! (`docker run --init`); the group stays the shell's, which is reaped only
//! after the group was signalled, and the watchdog keeps the group's id
//! taken until it is killed with the rest, so a signal never reaches a
//! stranger.
//!
//! The payload is written whole before the command starts: a payload still
//! streaming through a pipe when the worker died would reach the command
//! cut short, and it would run on that. So stdin is a pipe already holding
//! all of it, its write end closed (a payload up to 64 KiB, when the pipe
//! takes it without waiting), or else an anonymous temporary file: a pipe
//! costs no file system work and no trip through the blocking pool (an
//! `--exec` task ran about 5% faster, issue 27).

use std::future::Future;
use std::io::{self, PipeReader, PipeWriter, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use cairnq_core::Json;
use rustix::fs::{OFlags, fcntl_setfl};
use rustix::io::{FdFlags, fcntl_setfd};
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};

use super::ExecOptions;
use crate::context::TaskContext;

/// The script of the shell `sh -c` runs, `{fd}` the lifeline's read end and
/// `$1` the command line. It forks the watchdog twice (so it is no job of
/// this shell), which ignores the signals meant for the command (a
/// cancel's SIGTERM, a terminal's), waits for the end of file on the
/// lifeline (nothing is ever written; a lifeline it cannot open counts as
/// ended), then kills its group. Then it runs the command line as
/// `sh -c` would: no positional parameters, no variable of its own left.
const WRAPPER: &str = "( ( trap '' HUP INT QUIT TERM; { read -r _; } </dev/fd/{fd}; kill -s KILL 0 ) \
</dev/null >/dev/null 2>&1 & )
__cairnq_command=$1; shift
eval \"unset __cairnq_command
$__cairnq_command\"";

/// Starts `command` for the task of `ctx` in a new process group with its
/// watchdog, the whole payload on its stdin, stdout and stderr piped, the
/// task's identity in the environment.
pub(super) async fn spawn(
    command: &str,
    options: &ExecOptions,
    ctx: &TaskContext,
) -> io::Result<(Child, ProcessGroup)> {
    let payload: Stdio = match payload_pipe(ctx.payload_json().as_str().as_bytes())? {
        Some(pipe) => pipe.into(),
        None => payload_file(ctx.payload_json().clone()).await?.into(),
    };
    ProcessGroup::spawn(command, options, |cmd| {
        cmd.stdin(payload)
            .env("CAIRNQ_TASK_ID", ctx.task_id())
            .env("CAIRNQ_TASK_NAME", ctx.name())
            .env("CAIRNQ_ATTEMPT", ctx.attempt().to_string())
            .env("CAIRNQ_QUEUE", ctx.queue());
    })
}

/// The most payload a pipe is asked to hold: Linux's default pipe size
/// (a user past the pipe quota gets 4 KiB pipes; the write then comes up
/// short and the payload goes to a file).
const PIPED_PAYLOAD_MAX: usize = 64 << 10;

/// A pipe holding all of `payload` with its write end closed, or `None`
/// when the pipe cannot take it without waiting. Never blocks.
fn payload_pipe(payload: &[u8]) -> io::Result<Option<PipeReader>> {
    if payload.len() > PIPED_PAYLOAD_MAX {
        return Ok(None);
    }
    let (reader, mut writer) = io::pipe()?;
    fcntl_setfl(&writer, OFlags::NONBLOCK)?;
    match writer.write_all(payload) {
        Ok(()) => Ok(Some(reader)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
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

/// The command's process group (led by its shell), whose watchdog holds the
/// read end of [`lifeline`](Self::lifeline); killed when dropped unless finished.
#[derive(Debug)]
pub(super) struct ProcessGroup {
    /// The shell's pid, which is the group's id. `None` once finished.
    /// While the shell is not reaped (it is only before
    /// [`finish`](Self::finish)), no new process or group can take the id,
    /// so a signal never reaches a stranger.
    pgid: Option<Pid>,
    /// The worker's end of the watchdog's pipe: closed, by the kernel when
    /// the worker dies or here when the group is done, it lets the
    /// watchdog kill the group.
    lifeline: Option<PipeWriter>,
}

impl ProcessGroup {
    /// Spawns `sh -c command` through [`WRAPPER`] leading a new group,
    /// stdout and stderr piped, set up further by `configure` (stdin, the
    /// environment).
    pub(super) fn spawn(
        command: &str,
        options: &ExecOptions,
        configure: impl FnOnce(&mut Command),
    ) -> io::Result<(Child, Self)> {
        // Both ends close-on-exec, then the read end made inheritable: the
        // one descriptor of the worker's own a command starts with.
        let (watched, lifeline) = io::pipe()?;
        let watched = OwnedFd::from(watched);
        fcntl_setfd(&watched, FdFlags::empty())?;
        let script = WRAPPER.replace("{fd}", &watched.as_raw_fd().to_string());
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).arg("sh").arg(command).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        if let Some(dir) = &options.current_dir {
            cmd.current_dir(dir);
        }
        configure(&mut cmd);
        let child = cmd.spawn()?;
        // The shell has its copy: the worker keeps only the write end.
        drop(watched);
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
        let group = Self { pgid, lifeline: Some(lifeline) };
        match group.pgid {
            Some(_) => Ok((child, group)),
            None => Err(io::Error::other("the command exited as it started")),
        }
    }

    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (every member gone) is a harmless answer.
            let _ = kill_process_group(pgid, signal);
        }
    }

    /// The shell exited and is reaped: kill what it left behind and the
    /// watchdog (which holds the group's id until it dies with them), and
    /// close the lifeline.
    pub(super) fn finish(&mut self) {
        self.signal(Signal::KILL);
        self.pgid = None;
        self.lifeline = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // A shell left unreaped here is reaped by tokio in the background.
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
    group.finish();
    (status, reason)
}
