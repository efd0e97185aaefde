//! A real PgBouncer in transaction mode in front of the test Postgres, run
//! by `scripts/pgbouncer-test.sh`: where pooler mode
//! (`PostgresOptions::pooler`) is tested and benchmarked, since only a real
//! pooler shows what a transaction pooler breaks (named prepared
//! statements, session `search_path`, LISTEN).
//!
//! The binary is optional on a developer's machine: without it
//! [`TestPooler::shared`] answers `None` and says so on stderr, and the
//! tests skip. CI must have it: with `CAIRNQ_REQUIRE_PGBOUNCER` set (as
//! `.ci/run` and `cargo xtask test` set it), a missing binary is an error.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use cairnq_core::{Error, Result};

use super::server::workspace_root;
use super::test_dsn;

/// Set to make a missing `pgbouncer` binary an error instead of a skip.
pub const REQUIRE_ENV: &str = "CAIRNQ_REQUIRE_PGBOUNCER";

/// The port the shared test pooler tries first.
const SHARED_POOLER_PORT: u16 = 54360;

/// Server connections per database the shared test pooler keeps: as small
/// as the acceptance asks of a pooler (10).
const SHARED_SERVER_POOL: u16 = 10;

/// A PgBouncer in transaction mode in front of a Postgres server. Dropping
/// a private one stops it; the shared one lives on for the next test binary.
#[derive(Debug)]
pub struct TestPooler {
    dir: PathBuf,
    dsn: String,
    private: bool,
}

impl TestPooler {
    /// The pooler every test of a process shares, in front of
    /// [`test_dsn`]'s server (started on first use, reused when one runs).
    /// `None` (said once on stderr) when `pgbouncer` is not installed and
    /// [`REQUIRE_ENV`] is unset; a failure to start is an error.
    pub fn shared() -> Result<Option<&'static TestPooler>> {
        static SHARED: OnceLock<Result<Option<TestPooler>>> = OnceLock::new();
        let shared = SHARED.get_or_init(|| {
            let upstream = test_dsn()?;
            let port = upstream_port(&upstream)?;
            let dir = workspace_root().join("target").join(format!("pgbouncer-test-{port}"));
            Self::start(dir, SHARED_POOLER_PORT, &upstream, SHARED_SERVER_POOL)
        });
        match shared {
            Ok(pooler) => Ok(pooler.as_ref()),
            Err(error) => Err(error.replicate()),
        }
    }

    /// A pooler of its own in front of `upstream` (a `postgres://` DSN), on
    /// a free port, keeping at most `server_pool` server connections, in a
    /// new directory removed when it is dropped. `None` as for
    /// [`shared`](Self::shared).
    pub fn private(name: &str, upstream: &str, server_pool: u16) -> Result<Option<Self>> {
        let probe =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| pooler_error(format!("no free port: {e}")))?;
        let port = probe.local_addr().map_err(|e| pooler_error(format!("no free port: {e}")))?.port();
        drop(probe);
        let dir = std::env::temp_dir().join(format!("cairnq-pgbouncer-{name}-{}-{port}", std::process::id()));
        let started = Self::start(dir, port, upstream, server_pool)?;
        Ok(started.map(|mut pooler| {
            pooler.private = true;
            pooler
        }))
    }

    fn start(dir: PathBuf, port: u16, upstream: &str, server_pool: u16) -> Result<Option<Self>> {
        let (port, upstream_port) = (port.to_string(), upstream_port(upstream)?.to_string());
        let args = ["start".as_ref(), dir.as_os_str(), port.as_ref(), upstream_port.as_ref()];
        let server_pool = server_pool.to_string();
        let path = workspace_root().join("scripts").join("pgbouncer-test.sh");
        let output = Command::new("bash")
            .arg(&path)
            .args(args)
            .arg(&server_pool)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| pooler_error(format!("cannot run {}: {e}", path.display())))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Exit 3: no pgbouncer binary.
        if output.status.code() == Some(3) {
            if std::env::var_os(REQUIRE_ENV).is_some() {
                return Err(pooler_error(format!("{REQUIRE_ENV} is set but {}", stderr.trim())));
            }
            eprintln!("skipping the PgBouncer tests: {}", stderr.trim());
            return Ok(None);
        }
        if !output.status.success() {
            return Err(pooler_error(format!("{} failed ({}): {}", path.display(), output.status, stderr.trim())));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let dsn = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with("postgres"))
            .ok_or_else(|| pooler_error(format!("pgbouncer-test.sh printed no DSN: {stdout}")))?;
        // The pooler forwards every database; keep the upstream's.
        let database = upstream.rsplit('/').next().and_then(|d| d.split('?').next()).unwrap_or("cairnq_test");
        let dsn = super::dsn_with_database(dsn, database);
        Ok(Some(Self { dir, dsn, private: false }))
    }

    /// Where clients connect: the upstream's database and user, through
    /// the pooler.
    pub fn dsn(&self) -> &str {
        &self.dsn
    }

    /// The pooler's directory (its config and log).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for TestPooler {
    fn drop(&mut self) {
        if self.private {
            let path = workspace_root().join("scripts").join("pgbouncer-test.sh");
            let _ = Command::new("bash").arg(path).arg("stop").arg(&self.dir).output();
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = std::fs::remove_file(format!("{}.lock", self.dir.display()));
        }
    }
}

/// The port a `postgres://` DSN names (5432 when none).
fn upstream_port(dsn: &str) -> Result<u16> {
    let config: tokio_postgres::Config =
        dsn.parse().map_err(|e| pooler_error(format!("the upstream DSN does not parse: {e}")))?;
    Ok(config.get_ports().first().copied().unwrap_or(5432))
}

fn pooler_error(message: String) -> Error {
    Error::Storage { message: format!("test PgBouncer: {message}"), source: None, transient: false }
}
