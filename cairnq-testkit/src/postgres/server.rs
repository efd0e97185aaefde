//! The throwaway Postgres cluster of the tests, run by
//! `scripts/pg-test-server.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cairnq_core::{Error, Result};

use super::dsn_with_user;

/// A throwaway Postgres cluster run by `scripts/pg-test-server.sh`. Dropping
/// it stops the server (the shared one lives for the whole process and is
/// left running for the next test binary).
#[derive(Debug)]
pub struct TestServer {
    dir: PathBuf,
    dsn: String,
    /// A private server's directory goes when it does.
    private: bool,
}

impl TestServer {
    /// Starts (or reuses) the cluster in `dir`, listening on 127.0.0.1:`port`.
    pub fn start(dir: impl Into<PathBuf>, port: u16) -> Result<Self> {
        let dir = dir.into();
        let stdout = script(&["start".as_ref(), dir.as_os_str(), port.to_string().as_ref()])?;
        let dsn = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with("postgres"))
            .ok_or_else(|| server_error(format!("pg-test-server.sh printed no DSN: {stdout}")))?
            .to_string();
        Ok(Self { dir, dsn, private: false })
    }

    /// A server of its own, on a free port, in a new directory under the
    /// system temp dir that is removed when the server is dropped: for tests
    /// that restart or reconfigure a server, which would disturb every other
    /// test on the shared one.
    pub fn private(name: &str) -> Result<Self> {
        let probe =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| server_error(format!("no free port: {e}")))?;
        let port = probe.local_addr().map_err(|e| server_error(format!("no free port: {e}")))?.port();
        drop(probe);
        let dir = std::env::temp_dir().join(format!("cairnq-pg-{name}-{}-{port}", std::process::id()));
        let mut server = Self::start(dir, port)?;
        server.private = true;
        Ok(server)
    }

    /// The server's directory (its data directory is `data` inside).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The superuser DSN of the test database.
    pub fn dsn(&self) -> &str {
        &self.dsn
    }

    /// The DSN for another role (`user` or `user:password`), e.g. a
    /// [`TestRole`](super::TestRole).
    pub fn dsn_for(&self, user_and_password: &str) -> String {
        dsn_with_user(&self.dsn, user_and_password)
    }

    /// `pg_ctl restart -m fast`: every connection is cut.
    pub fn restart(&self) -> Result<()> {
        script(&["restart".as_ref(), self.dir.as_os_str()]).map(drop)
    }

    /// Stops the server.
    pub fn stop(&self) -> Result<()> {
        script(&["stop".as_ref(), self.dir.as_os_str()]).map(drop)
    }

    /// Starts a [`stop`](Self::stop)ped server again, on the same port (an
    /// outage that ends): the DSN stays valid.
    pub fn start_again(&self) -> Result<()> {
        let port = self.dsn.rsplit_once(':').and_then(|(_, rest)| rest.split('/').next()).unwrap_or_default();
        let stdout = script(&["start".as_ref(), self.dir.as_os_str(), port.as_ref()])?;
        match stdout.lines().rev().find(|l| l.starts_with("postgres")) {
            Some(dsn) if dsn == self.dsn => Ok(()),
            other => Err(server_error(format!("restarted on another address: {other:?}, not {}", self.dsn))),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop();
        if self.private {
            let _ = std::fs::remove_dir_all(&self.dir);
            // The script's lock file sits beside the directory.
            let _ = std::fs::remove_file(format!("{}.lock", self.dir.display()));
        }
    }
}

fn script(args: &[&std::ffi::OsStr]) -> Result<String> {
    let path = workspace_root().join("scripts").join("pg-test-server.sh");
    let output = Command::new("bash")
        .arg(&path)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| server_error(format!("cannot run {}: {e}", path.display())))?;
    if !output.status.success() {
        return Err(server_error(format!("{} {args:?} failed ({})", path.display(), output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

pub(super) fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn server_error(message: String) -> Error {
    Error::Storage { message: format!("test Postgres server: {message}"), source: None, transient: false }
}
