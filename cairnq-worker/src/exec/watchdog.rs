//! The watchdog: one small shell per [`ExecHandler`](super::ExecHandler)
//! or [`ServeHandler`](super::ServeHandler) that SIGKILLs the process groups
//! of its commands when the worker dies without a word (SIGKILL, a crash,
//! the OOM killer), so no command runs on past its lease beside its own
//! retry.
//!
//! The watchdog reads a pipe whose only writer is the worker: a line
//! `+PGID` when a command's group starts, `-PGID` once the worker killed
//! the group itself (its normal end). The kernel closes the worker's end
//! when the worker dies, however it dies; the watchdog then reads an end
//! of file and kills every group still listed. A command runs only once
//! its group is listed: its shell waits at a gate the worker opens after
//! the `+PGID` line is in the pipe (see `child`), and the pipe keeps what
//! was written for the reader after its writer is gone.
//!
//! Why not a watchdog per command: the shell that ran the command forked
//! one (two forks per task), the largest share of what a task cost above
//! the bare spawn of its command (issue 27; BENCHMARKS.md, 2026-12-05).
//!
//! A watchdog that died (killed by hand) is found at the next write (the
//! pipe is broken) and started again with every group still live. A write
//! never waits in practice: the watchdog reads as fast as a worker spawns,
//! and the pipe holds thousands of lines.
//!
//! The watchdog ignores the signals a terminal or a stop sends, and is in
//! a process group of its own, so a Ctrl-C meant for the worker (which
//! drains) does not reach it. It exits at the end of file.

use std::collections::BTreeSet;
use std::io::{self, PipeWriter, Write};
use std::process::Stdio;

use parking_lot::Mutex;
use tokio::process::{Child, Command};

/// The watchdog's script: keeps the listed groups as ` ID ID ... ` and
/// kills them all at the end of file.
const SCRIPT: &str = r#"trap '' HUP INT QUIT TERM
live=' '
while IFS= read -r line; do
    case $line in
    +*) live="$live${line#?} " ;;
    -*) case $live in *" ${line#?} "*) live="${live%% ${line#?} *} ${live#* ${line#?} }" ;; esac ;;
    esac
done
for group in $live; do kill -s KILL -- "-$group" 2>/dev/null; done"#;

/// The watchdog of one handler's commands, started at its first command.
#[derive(Debug, Default)]
pub(super) struct Watchdog {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The running watchdog and the worker's end of its pipe.
    running: Option<Running>,
    /// Groups started and not yet killed by the worker.
    live: BTreeSet<i32>,
}

#[derive(Debug)]
struct Running {
    /// Held so the watchdog is reaped once it exits (when this handler and
    /// all its commands are gone, its pipe closes and it exits).
    _process: Child,
    pipe: PipeWriter,
}

impl Watchdog {
    /// Lists `pgid` with the watchdog (starting it when there is none, or
    /// again when it died); once this returns, the group is killed if the
    /// worker dies.
    pub(super) fn watch(&self, pgid: i32) -> io::Result<()> {
        let mut state = self.state.lock();
        state.live.insert(pgid);
        if let Some(running) = state.running.as_mut()
            && running.pipe.write_all(format!("+{pgid}\n").as_bytes()).is_ok()
        {
            return Ok(());
        }
        match start(&state.live) {
            Ok(running) => {
                state.running = Some(running);
                Ok(())
            }
            Err(e) => {
                state.running = None;
                state.live.remove(&pgid);
                Err(e)
            }
        }
    }

    /// Takes `pgid` off the list: the worker killed the group itself.
    pub(super) fn forget(&self, pgid: i32) {
        let mut state = self.state.lock();
        state.live.remove(&pgid);
        let written = state.running.as_mut().map(|running| running.pipe.write_all(format!("-{pgid}\n").as_bytes()));
        if let Some(Err(_)) = written {
            // Dead: the next `watch` starts another with the live groups.
            state.running = None;
        }
    }
}

/// Starts a watchdog that lists `live` already.
fn start(live: &BTreeSet<i32>) -> io::Result<Running> {
    // The worker's end is close-on-exec: no command holds it open.
    let (reader, mut pipe) = io::pipe()?;
    let process = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .stdin(reader)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let lines: String = live.iter().map(|pgid| format!("+{pgid}\n")).collect();
    pipe.write_all(lines.as_bytes())?;
    Ok(Running { _process: process, pipe })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rustix::process::{Pid, Signal, kill_process, test_kill_process_group};

    use super::*;

    /// A `sleep` leading a process group of its own; its pid is the group's id.
    fn sleeper() -> Child {
        Command::new("sleep").arg("30").process_group(0).kill_on_drop(true).spawn().expect("spawn sleep")
    }

    fn watchdog_pid(watchdog: &Watchdog) -> Pid {
        let state = watchdog.state.lock();
        let id = state.running.as_ref().and_then(|running| running._process.id());
        id.and_then(|id| Pid::from_raw(i32::try_from(id).ok()?)).expect("a running watchdog")
    }

    fn group_of(child: &Child) -> i32 {
        child.id().and_then(|id| i32::try_from(id).ok()).expect("a running child")
    }

    /// Whether the group still has a live member, waiting up to 5 s for it to go
    /// when `expect_gone`.
    async fn alive(child: &mut Child, expect_gone: bool) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let exited = child.try_wait().expect("try_wait").is_some();
            let gone =
                exited || Pid::from_raw(group_of(child)).is_none_or(|pgid| test_kill_process_group(pgid).is_err());
            if gone || !expect_gone || Instant::now() > until {
                return !gone;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_end_of_its_pipe_kills_the_listed_groups_and_only_them() {
        let watchdog = Watchdog::default();
        let (mut listed, mut forgotten, mut another) = (sleeper(), sleeper(), sleeper());
        for child in [&listed, &forgotten, &another] {
            watchdog.watch(group_of(child)).expect("watch");
        }
        watchdog.forget(group_of(&forgotten));
        watchdog.forget(group_of(&another));
        watchdog.watch(group_of(&another)).expect("watch again");
        // As when the worker dies: the pipe's only writer closes.
        drop(watchdog);
        assert!(!alive(&mut listed, true).await, "a listed group outlived the pipe");
        assert!(!alive(&mut another, true).await, "a group listed again outlived the pipe");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(alive(&mut forgotten, false).await, "a forgotten group was killed");
    }

    #[tokio::test]
    async fn a_watchdog_killed_by_hand_is_replaced_with_every_live_group() {
        let watchdog = Watchdog::default();
        let (mut first, mut second) = (sleeper(), sleeper());
        watchdog.watch(group_of(&first)).expect("watch");
        let pid = watchdog_pid(&watchdog);
        kill_process(pid, Signal::KILL).expect("kill the watchdog");
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The next write finds the pipe broken and starts another watchdog.
        watchdog.watch(group_of(&second)).expect("watch with a new watchdog");
        assert_ne!(watchdog_pid(&watchdog), pid);
        drop(watchdog);
        assert!(!alive(&mut first, true).await, "a group listed with the dead watchdog outlived the pipe");
        assert!(!alive(&mut second, true).await);
    }
}
