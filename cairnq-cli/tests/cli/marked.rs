//! Processes told apart by a mark in their environment: a test starts a
//! worker with `CAIRNQ_TEST_MARK=<mark>`, every command the worker runs
//! (and whatever those start) inherits it, so `/proc` tells which of that
//! worker's processes still run, whatever their pids, pid reuse included.

use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable holding the mark.
pub(crate) const MARK_VAR: &str = "CAIRNQ_TEST_MARK";

/// A mark no other test of any run uses; dropping it SIGKILLs whatever
/// still carries it, so a failed assertion leaves no stray commands behind.
#[derive(Debug)]
pub(crate) struct Mark(String);

impl Mark {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Self(format!("{}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), nanos.as_nanos()))
    }

    pub(crate) fn value(&self) -> &str {
        &self.0
    }

    /// The live processes carrying the mark (zombies, dead already, are
    /// not), each as `pid (command line)`.
    pub(crate) fn live(&self) -> Vec<String> {
        let wanted = format!("{MARK_VAR}={}", self.0);
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else { continue };
            // Processes of other users, or gone meanwhile, cannot be read.
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
            if !environ.split(|b| *b == 0).any(|var| var == wanted.as_bytes()) || zombie(pid) {
                continue;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("{pid} ({})", cmdline.trim()));
        }
        found
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        for process in self.live() {
            let pid = process.split(' ').next().unwrap_or_default();
            let _ = std::process::Command::new("kill").args(["-KILL", pid]).status();
        }
    }
}

/// Whether process `pid` has exited and waits to be reaped (or is gone).
fn zombie(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_none_or(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}
