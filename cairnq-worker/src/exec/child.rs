//! The command's processes: `sh -c COMMAND` in a process group of its
//! own, so a stop reaches the whole pipeline (and a Ctrl-C meant for the
//! worker does not reach it: the worker drains while it finishes), stopped
//! with SIGTERM, then SIGKILL after a grace period.
//!
//! The worker kills the group whenever the attempt ends: after the shell
//! exits (whatever it left running would otherwise keep the output pipes
//! open and outlive its task) and when the attempt is dropped unfinished
//! (`max_run`, a drain timeout, a stop at once). A worker that dies without
//! a word (SIGKILL, a crash, the OOM killer) cannot, and an orphaned
//! command would run on past its lease, beside its own retry: the
//! handler's [`Watchdog`] kills the groups of a dead worker. The shell
//! first waits at a gate ([`Gate`]), a pipe the worker writes one line to
//! once the group is on the watchdog's list; a worker that dies before
//! that closes the gate unopened, and the shell exits without running the
//! command.
//!
//! The group's id is the shell's pid, signalled after the shell is reaped
//! (tokio reaps it in `wait`). Another group could take that id only if
//! the system handed out every other process id in the instant between the
//! reaping and the signal, which takes far longer than that instant.
//!
//! The payload is written whole before the command starts: a payload still
//! streaming through a pipe when the worker died would reach the command
//! cut short, and it would run on that. So stdin is a pipe that gets the
//! gate's line and the whole payload behind it in one write, once the pipe
//! is known to have room for both (a payload under 64 KiB, usually), or
//! else an anonymous temporary file, with a gate on a pipe of its own. A
//! pipe costs no file system work and no trip through the blocking pool (an
//! `--exec` task ran about 5% faster, issue 27), and the gate in stdin one
//! pipe and one open fewer per task.

use std::borrow::Cow;
use std::future::Future;
use std::io::{self, PipeReader, PipeWriter, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use cairnq_core::{Error, Json, Result};
use rustix::fs::{OFlags, fcntl_setfl};
use rustix::io::{FdFlags, fcntl_setfd};
use rustix::pipe::fcntl_getpipe_size;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};

use super::watchdog::Watchdog;
use super::{ExecOptions, program};
use crate::context::TaskContext;

/// The script of the shell `sh -c` runs, `{gate}` where the gate's line
/// comes from, `$1` the command line and any arguments after it
/// `NAME=value` words to export. It waits for the gate's line (an end of
/// file, or a gate it cannot open, means the worker is gone or gave up: it
/// exits), exports the words, then runs the command line as `sh -c` would:
/// no positional parameters, no variable of its own left. A shell's `read`
/// takes no byte past the line from a pipe, so the payload behind the line
/// in stdin is all the command's.
///
/// The task's variables come as arguments, not through the spawn's
/// environment: a spawn that changes the environment makes std copy the
/// worker's whole environment first, at every task (0.7% of an `--exec
/// true` drain's samples, issue 27). `export "$@"` expands nothing in the
/// values.
const WRAPPER: &str = "{ IFS= read -r _; } {gate} || exit 1
__cairnq_command=$1; shift
[ $# -eq 0 ] || export \"$@\"; set --
eval \"unset __cairnq_command
$__cairnq_command\"";

/// Where a command's shell waits for the word to run its command line.
pub(super) enum Gate {
    /// A pipe of its own: one more descriptor the shell inherits, stdin
    /// being the caller's to set.
    OwnPipe,
    /// The first line of stdin, a pipe ([`stdin_gate`]): `word` is the
    /// line and the payload behind it, written at once.
    Stdin { pipe: PipeWriter, word: Vec<u8> },
}

/// Starts the launcher's command for the task of `ctx` in a new process
/// group watched by its watchdog, the whole payload on its stdin, stdout
/// and stderr piped, the task's identity in the environment.
pub(super) async fn spawn(
    launcher: &Launcher,
    options: &ExecOptions,
    ctx: &TaskContext,
) -> io::Result<(Child, ProcessGroup)> {
    let (stdin, gate): (Stdio, Gate) = match stdin_gate(ctx.payload_json().as_str().as_bytes())? {
        Some((stdin, gate)) => (stdin.into(), gate),
        None => (payload_file(ctx.payload_json().clone()).await?.into(), Gate::OwnPipe),
    };
    let exports = [
        format!("CAIRNQ_TASK_ID={}", ctx.task_id()),
        format!("CAIRNQ_TASK_NAME={}", ctx.name()),
        format!("CAIRNQ_ATTEMPT={}", ctx.attempt()),
        format!("CAIRNQ_QUEUE={}", ctx.queue()),
    ];
    ProcessGroup::spawn(launcher, options, gate, stdin, &exports)
}

/// The most payload a pipe is asked to hold: Linux's default pipe size
/// (a user past the pipe quota gets 4 KiB pipes, and [`stdin_gate`] finds
/// no room).
const PIPED_PAYLOAD_MAX: usize = 64 << 10;

/// A pipe for stdin, empty, and the gate that writes the gate's line and
/// `payload` into it in one write; `None` when the pipe has no room for
/// both. A write into an empty pipe with room for all of it is never
/// split, so a worker that dies leaves the pipe with nothing or with the
/// whole payload.
fn stdin_gate(payload: &[u8]) -> io::Result<Option<(PipeReader, Gate)>> {
    if payload.len() >= PIPED_PAYLOAD_MAX {
        return Ok(None);
    }
    let (reader, writer) = io::pipe()?;
    if fcntl_getpipe_size(&writer)? <= payload.len() {
        return Ok(None);
    }
    // Never waits: a write the pipe cannot take fails the spawn instead.
    fcntl_setfl(&writer, OFlags::NONBLOCK)?;
    Ok(Some((reader, Gate::Stdin { pipe: writer, word: [b"\n", payload].concat() })))
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

/// A new gate on a pipe of its own: its read end (inheritable), its write
/// end (close-on-exec), and the [`WRAPPER`] script that waits at it.
fn gated_wrapper() -> io::Result<(OwnedFd, PipeWriter, String)> {
    // Both ends close-on-exec, then the read end made inheritable: the one
    // descriptor of the worker's own a command starts with.
    let (gate_out, gate) = io::pipe()?;
    let gate_out = OwnedFd::from(gate_out);
    fcntl_setfd(&gate_out, FdFlags::empty())?;
    let script = WRAPPER.replace("{gate}", &format!("</dev/fd/{}", gate_out.as_raw_fd()));
    Ok((gate_out, gate, script))
}

/// The [`WRAPPER`] script that waits at a gate in stdin: the same for
/// every spawn, so made once.
fn stdin_wrapper() -> &'static str {
    static SCRIPT: LazyLock<String> = LazyLock::new(|| WRAPPER.replace("{gate} ", ""));
    &SCRIPT
}

/// A handler's command line and what starts it: the line its shells run
/// ([`program::shell_line`], worked out once) and the watchdog of its
/// process groups.
#[derive(Debug)]
pub(super) struct Launcher {
    command: String,
    shell_line: String,
    watchdog: Arc<Watchdog>,
}

impl Launcher {
    /// Fails with a validation error when `command` is blank or holds a NUL.
    pub(super) fn new(command: String) -> Result<Self> {
        if command.trim().is_empty() || command.contains('\0') {
            return Err(Error::validation("command", "must not be blank or hold a NUL character"));
        }
        Ok(Self { shell_line: program::shell_line(&command), command, watchdog: Arc::default() })
    }

    /// The command line as the application gave it.
    pub(super) fn command(&self) -> &str {
        &self.command
    }

    /// Checks the program the command line starts is there (run from
    /// `options`' directory), a validation error saying why when it is not.
    pub(super) async fn check_program(&self, options: &ExecOptions) -> Result<()> {
        let dir = options.current_dir.as_deref();
        program::check(&self.command, dir).await.map_err(|why| Error::validation("command", why))
    }
}

/// The command's process group (led by its shell), on its watchdog's list
/// until [`finish`](Self::finish)ed; killed when dropped unless finished.
#[derive(Debug)]
pub(super) struct ProcessGroup {
    /// The shell's pid, which is the group's id. `None` once finished.
    pgid: Option<Pid>,
    watchdog: Arc<Watchdog>,
}

impl ProcessGroup {
    /// Spawns the launcher's shell line through [`WRAPPER`] leading a new
    /// group, `stdin` as given (a gate in stdin brings its own), stdout and
    /// stderr piped, `exports` (`NAME=value` words) exported by the
    /// wrapper; lists the group with the launcher's watchdog, then opens
    /// the gate.
    pub(super) fn spawn(
        launcher: &Launcher,
        options: &ExecOptions,
        gate: Gate,
        stdin: Stdio,
        exports: &[String],
    ) -> io::Result<(Child, Self)> {
        let (gate_out, mut gate, word, script) = match gate {
            Gate::OwnPipe => {
                let (gate_out, gate, script) = gated_wrapper()?;
                (Some(gate_out), gate, b"\n".to_vec(), Cow::Owned(script))
            }
            Gate::Stdin { pipe, word } => (None, pipe, word, Cow::Borrowed(stdin_wrapper())),
        };
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script.as_ref()).arg("sh").arg(&launcher.shell_line).args(exports);
        cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        if let Some(dir) = &options.current_dir {
            cmd.current_dir(dir);
        }
        let child = cmd.spawn()?;
        // The shell has its copy; dropping ours also keeps other commands
        // spawned from now on from inheriting it.
        drop(gate_out);
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
        let Some(pgid) = pgid else { return Err(io::Error::other("the command exited as it started")) };
        // Dropped on an error, the group is killed and the gate closes.
        let group = Self { pgid: Some(pgid), watchdog: launcher.watchdog.clone() };
        launcher.watchdog.watch(pgid.as_raw_nonzero().get())?;
        gate.write_all(&word)?;
        Ok((child, group))
    }

    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (every member gone) is a harmless answer.
            let _ = kill_process_group(pgid, signal);
        }
    }

    /// The shell exited and is reaped: kill what it left behind, then take
    /// the group off the watchdog's list.
    pub(super) fn finish(&mut self) {
        self.signal(Signal::KILL);
        if let Some(pgid) = self.pgid.take() {
            self.watchdog.forget(pgid.as_raw_nonzero().get());
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // A shell left unreaped here is reaped by tokio in the background.
        self.finish();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrapper's shell with its gate's read end, given `command`; the
    /// gate's write end is returned for the test to open or drop.
    fn gated(command: &str) -> (Child, PipeWriter) {
        let (_gate_out, gate, script) = gated_wrapper().expect("a gate");
        let child = Command::new("sh")
            .args(["-c", &script, "sh", command])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        (child, gate)
    }

    #[tokio::test]
    async fn a_gate_closed_unopened_runs_no_command() {
        let (child, gate) = gated("echo ran");
        drop(gate);
        let out = child.wait_with_output().await.expect("wait");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
        assert_eq!(out.status.code(), Some(1));
    }

    /// The wrapper's shell waiting at a gate in stdin, given `command`,
    /// `payload` and `exports`; the gate to open or drop.
    fn gated_in_stdin(command: &str, payload: &[u8], exports: &[&str]) -> (Child, Gate) {
        let (stdin, gate) = stdin_gate(payload).expect("a pipe").expect("room for the payload");
        let child = Command::new("sh")
            .args(["-c", stdin_wrapper(), "sh", command])
            .args(exports)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        (child, gate)
    }

    fn open(gate: Gate) {
        let Gate::Stdin { mut pipe, word } = gate else { panic!("a gate in stdin") };
        pipe.write_all(&word).expect("open the gate");
    }

    #[tokio::test]
    async fn a_gate_in_stdin_closed_unopened_runs_no_command() {
        let (child, gate) = gated_in_stdin("echo ran", b"{}", &[]);
        drop(gate);
        let out = child.wait_with_output().await.expect("wait");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
        assert_eq!(out.status.code(), Some(1));
    }

    /// The command reads the payload and nothing of the gate's line, also
    /// a payload of lines that fills the pipe but one byte.
    #[tokio::test]
    async fn behind_a_gate_in_stdin_the_command_reads_the_payload_alone() {
        for payload in ["{\"a\": 1}".to_string(), "x\n".repeat((PIPED_PAYLOAD_MAX - 2) / 2)] {
            let (child, gate) = gated_in_stdin("cat", payload.as_bytes(), &[]);
            open(gate);
            let out = child.wait_with_output().await.expect("wait");
            assert_eq!(String::from_utf8_lossy(&out.stdout), payload);
            assert!(out.status.success());
        }
    }

    /// The words after the command line reach the command's environment
    /// as written (nothing in them expanded), and no positional parameter.
    #[tokio::test]
    async fn the_words_after_the_command_line_are_exported_verbatim() {
        let odd = "CAIRNQ_ODD=a b $HOME `id` \"q\" 'q'\nline=2";
        let command = r#"printf '%s|%s|%s|' "$#" "$CAIRNQ_ODD" "$CAIRNQ_PLAIN"; env | grep -c '^CAIRNQ_PLAIN=1$'"#;
        let (child, gate) = gated_in_stdin(command, b"{}", &[odd, "CAIRNQ_PLAIN=1"]);
        open(gate);
        let out = child.wait_with_output().await.expect("wait");
        let value = odd.trim_start_matches("CAIRNQ_ODD=");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("0|{value}|1|1\n"));
        assert!(out.status.success());
    }

    #[test]
    fn a_payload_the_pipe_cannot_take_with_the_line_has_no_gate_in_stdin() {
        let full = vec![b'x'; PIPED_PAYLOAD_MAX - 1];
        assert!(stdin_gate(&full).expect("a pipe").is_some());
        assert!(stdin_gate(&[full, vec![b'x']].concat()).expect("a pipe").is_none());
    }

    #[tokio::test]
    async fn an_opened_gate_runs_the_command_line_as_sh_c_would() {
        let (child, mut gate) = gated(r#"echo "$# ${__cairnq_command-unset}" | tr a-z A-Z"#);
        gate.write_all(b"\n").expect("open the gate");
        let out = child.wait_with_output().await.expect("wait");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0 UNSET\n");
        assert!(out.status.success());
    }
}
