//! Child processes that file permissions actually stop.
//!
//! Tests of read-only databases need a process that cannot write a file the
//! test made read-only. Root ignores permission bits, and the test suites
//! run as root on CI, so there the child runs as the unprivileged
//! [`USER`] through `runuser`; a suite run by an ordinary user is already
//! unprivileged and starts the child directly. When neither works the
//! caller skips with the reason [`command`] gives.

use std::path::Path;
use std::process::{Command, Stdio};

/// The account a root test run starts its unprivileged children as (it
/// exists wherever the Postgres server packages are installed, which the
/// suite needs anyway).
pub const USER: &str = "postgres";

/// Whether this process runs as root (asked of `id -u`, so no unsafe call
/// is needed).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A command that runs `program` as a user file permissions apply to: this
/// user when it is not root, else [`USER`] through `runuser`. `Err` says why
/// neither is possible (print it and skip the test).
///
/// The files the child must reach need permissions for that user: make a
/// temp dir world-accessible (`0o755` or `0o777`) before putting them in it.
pub fn command(program: &Path) -> Result<Command, String> {
    if !is_root() {
        return Ok(Command::new(program));
    }
    let usable = Command::new("runuser")
        .args(["-u", USER, "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !usable {
        return Err(format!(
            "running as root, where permissions do not stop writes, and `runuser -u {USER} -- true` fails: \
             no unprivileged user to run the child as"
        ));
    }
    let mut command = Command::new("runuser");
    command.args(["-u", USER, "--"]).arg(program);
    Ok(command)
}

/// Sets a file's or directory's permission bits (`0o444`, `0o777`, ...).
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}
