//! The watchdog: one small shell per [`ExecHandler`](super::ExecHandler)
//! or [`ServeHandler`](super::ServeHandler) that SIGKILLs the process groups
//! of its commands when the worker dies without a word (SIGKILL, a crash,
//! the OOM killer), so no command runs on past its lease beside its own
//! retry.
//!
//! The worker lists each live group in a slot of a file the watchdog
//! shares (its stdout): a group's id once its group starts, blanked once
//! the worker killed the group itself (its normal end). The watchdog only
//! waits on a pipe whose only writer is the worker, and nothing is ever
//! written to it: the kernel closes the worker's end when the worker dies,
//! however it dies, and the watchdog then reads an end of file, reads the
//! slots and kills every group listed there. A command runs only once its
//! group is listed: its shell waits at a gate the worker opens after the
//! slot is written (see `child`). A slot is twelve bytes written in one
//! `pwrite` into the page cache, which a worker's death does not split.
//!
//! Why a file and not lines on the pipe: a line woke the watchdog twice
//! per task (a group listed, a group gone), and a wakeup of another process
//! is an interrupt to the other core, which a virtual machine pays dearly;
//! with the watchdog's byte-by-byte reads it cost an `--exec` worker about
//! 3.5% of its CPU (BENCHMARKS.md, 2026-12-05T21:00Z). Why not a watchdog
//! per command: the shell that ran the command forked one (two forks per
//! task), the largest share of what a task cost above the bare spawn of
//! its command (issue 27; BENCHMARKS.md, 2026-12-05T17:30Z).
//!
//! A watchdog that died (killed by hand) is found at the next group listed
//! (it is no longer running) and started again on the same file, which
//! lists every group still live.
//!
//! The watchdog ignores the signals a terminal or a stop sends, and is in
//! a process group of its own, so a Ctrl-C meant for the worker (which
//! drains) does not reach it. It exits at the end of file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, PipeWriter};
use std::os::unix::fs::FileExt;
use std::process::Stdio;

use parking_lot::Mutex;
use tokio::process::{Child, Command};

/// The watchdog's script: waits for the end of its stdin, then kills the
/// group of every slot of its stdout (blank slots are free).
const SCRIPT: &str = r#"trap '' HUP INT QUIT TERM
while IFS= read -r _; do :; done
while read -r group; do [ -z "$group" ] || kill -s KILL -- "-$group" 2>/dev/null; done <&1"#;

/// A slot: a group id right-aligned in 11 bytes (a pid is at most 10
/// digits), then a newline.
const SLOT: u64 = 12;

/// A free slot.
const BLANK: &[u8; 12] = b"           \n";

/// The watchdog of one handler's commands, started at its first command.
#[derive(Debug, Default)]
pub(super) struct Watchdog {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The running watchdog and the worker's end of its pipe.
    running: Option<Running>,
    /// The slots, made with the first watchdog and kept for its successors.
    slots: Option<File>,
    /// The slot of each group started and not yet killed by the worker.
    live: HashMap<i32, u64>,
    /// Slots blanked, to reuse.
    free: Vec<u64>,
    /// Slots in the file.
    used: u64,
}

#[derive(Debug)]
struct Running {
    /// Held so the watchdog is reaped once it exits (when this handler and
    /// all its commands are gone, its pipe closes and it exits).
    process: Child,
    /// Never written: its end is the worker's death notice.
    _pipe: PipeWriter,
}

impl Watchdog {
    /// Lists `pgid` with the watchdog (starting it when there is none, or
    /// again when it died); once this returns, the group is killed if the
    /// worker dies.
    pub(super) fn watch(&self, pgid: i32) -> io::Result<()> {
        let mut state = self.state.lock();
        let State { running, slots, live, free, used } = &mut *state;
        let slots = match slots {
            Some(slots) => slots,
            None => slots.insert(slot_file()?),
        };
        let slot = free.pop().unwrap_or(*used);
        if let Err(e) = slots.write_all_at(format!("{pgid:>11}\n").as_bytes(), slot * SLOT) {
            // The slot stays free for the next group, which overwrites
            // whatever part of this id got in (a new slot is not counted
            // as used yet).
            if slot < *used {
                free.push(slot);
            }
            return Err(e);
        }
        *used = (*used).max(slot + 1);
        live.insert(pgid, slot);
        if running.as_mut().is_some_and(|running| matches!(running.process.try_wait(), Ok(None))) {
            return Ok(());
        }
        match start(slots) {
            Ok(started) => {
                *running = Some(started);
                Ok(())
            }
            Err(e) => {
                *running = None;
                state.forget(pgid);
                Err(e)
            }
        }
    }

    /// Takes `pgid` off the list: the worker killed the group itself.
    pub(super) fn forget(&self, pgid: i32) {
        self.state.lock().forget(pgid);
    }
}

impl State {
    /// Blanks the slot of `pgid`. A slot that cannot be blanked (a write
    /// into the page cache failing) is not reused; its group, reaped, is
    /// what a dying worker's watchdog would signal in vain.
    fn forget(&mut self, pgid: i32) {
        if let (Some(slots), Some(slot)) = (&self.slots, self.live.remove(&pgid))
            && slots.write_all_at(BLANK, slot * SLOT).is_ok()
        {
            self.free.push(slot);
        }
    }
}

/// A new, empty file for the slots: in memory where the system has such
/// files (no file system that must be writable, or could be full: a
/// container's may be read-only), else a temporary file.
fn slot_file() -> io::Result<File> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    return Ok(File::from(rustix::fs::memfd_create("cairnq-watchdog", rustix::fs::MemfdFlags::CLOEXEC)?));
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    tempfile::tempfile()
}

/// Starts a watchdog reading `slots` at its end.
fn start(slots: &File) -> io::Result<Running> {
    // The worker's end is close-on-exec: no command holds it open.
    let (reader, pipe) = io::pipe()?;
    let process = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .stdin(reader)
        .stdout(slots.try_clone()?)
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(Running { process, _pipe: pipe })
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
        let id = state.running.as_ref().and_then(|running| running.process.id());
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
