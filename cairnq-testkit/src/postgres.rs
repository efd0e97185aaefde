//! The [`BackendFactory`] of our Postgres backend, and the throwaway server
//! the Postgres tests run against.
//!
//! Every store is a fresh schema in one test database, so scenarios never
//! see each other's rows. The server is `CAIRNQ_TEST_PG_DSN` when set (CI
//! and `cargo xtask test` set it); otherwise the first caller in a process
//! starts a cluster with `scripts/pg-test-server.sh` in
//! `<workspace>/target/pg-test` (idempotent: an already running one is
//! reused), so plain `cargo test` works on a machine with Postgres
//! installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use cairnq_core::{Error, Result};
use cairnq_postgres::{PostgresOptions, PostgresStore};

use crate::{BackendFactory, FreshStore, StoreLocator};

/// The environment variable naming the test server.
pub const DSN_ENV: &str = "CAIRNQ_TEST_PG_DSN";

/// The port of the shared throwaway cluster (the one `cargo xtask test`
/// uses too).
pub const SHARED_PORT: u16 = 54329;

/// The test server's DSN: `$CAIRNQ_TEST_PG_DSN`, else the shared throwaway
/// cluster, started on first use.
pub fn test_dsn() -> Result<String> {
    if let Ok(dsn) = std::env::var(DSN_ENV) {
        return Ok(dsn);
    }
    static SHARED: OnceLock<Result<TestServer>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| TestServer::start(workspace_root().join("target").join("pg-test"), SHARED_PORT));
    match shared {
        Ok(server) => Ok(server.dsn().to_string()),
        // A copy, not a new error around its text: that read
        // "storage error: test Postgres server: storage error: ...".
        Err(error) => Err(error.replicate()),
    }
}

/// `dsn` (a `postgres://` URL) naming database `database` instead.
///
/// ```
/// use cairnq_testkit::postgres::dsn_with_database;
/// let dsn = "postgres://postgres@127.0.0.1:54329/cairnq_test?sslmode=disable";
/// assert_eq!(dsn_with_database(dsn, "other"), "postgres://postgres@127.0.0.1:54329/other?sslmode=disable");
/// ```
pub fn dsn_with_database(dsn: &str, database: &str) -> String {
    let (base, query) = dsn.split_once('?').map_or((dsn, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let host_part = base[authority_end..].split('/').next().unwrap_or_default();
    let mut out = format!("{}{host_part}/{database}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `dsn` (a `postgres://` URL) with `user_and_password` (`user` or
/// `user:password`) as its credentials.
///
/// ```
/// use cairnq_testkit::postgres::dsn_with_user;
/// let dsn = "postgres://postgres@127.0.0.1:54329/cairnq_test";
/// assert_eq!(dsn_with_user(dsn, "cairnq_pw:x"), "postgres://cairnq_pw:x@127.0.0.1:54329/cairnq_test");
/// ```
pub fn dsn_with_user(dsn: &str, user_and_password: &str) -> String {
    let authority_start = dsn.find("://").map_or(0, |i| i + 3);
    let rest = &dsn[authority_start..];
    let host_and_path = rest.split_once('@').map_or(rest, |(_, after)| after);
    format!("{}{user_and_password}@{host_and_path}", &dsn[..authority_start])
}

/// A new schema (or database) name no other test uses:
/// `t_<epoch ms>_<random>`. `scripts/pg-test-server.sh start` drops the ones
/// older than two hours from a reused server.
pub fn fresh_schema_name() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let random = cairnq_core::backend::new_task_id().to_lowercase();
    format!("t_{now}_{}", &random[random.len() - 10..])
}

/// Opens the cairnq installation in `schema` (how a child worker process
/// joins a test's store).
pub async fn open(dsn: &str, schema: &str) -> Result<PostgresStore> {
    PostgresStore::connect_with(dsn, PostgresOptions::new().schema(schema).pool_size(4)).await
}

/// Fresh Postgres stores: one new schema each, on one server.
///
/// ```no_run
/// # async fn demo() -> cairnq_core::Result<()> {
/// let factory = cairnq_testkit::postgres::PostgresFactory::from_test_server()?;
/// cairnq_testkit::scenario::assert_conformance(&factory).await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresFactory {
    dsn: String,
}

impl PostgresFactory {
    /// Stores on the server at `dsn` (a role that may create schemas).
    pub fn new(dsn: impl Into<String>) -> Self {
        Self { dsn: dsn.into() }
    }

    /// Stores on [`test_dsn`]'s server.
    pub fn from_test_server() -> Result<Self> {
        Ok(Self::new(test_dsn()?))
    }

    /// The server's DSN.
    pub fn dsn(&self) -> &str {
        &self.dsn
    }
}

#[async_trait]
impl BackendFactory for PostgresFactory {
    fn name(&self) -> &str {
        "postgres"
    }

    async fn fresh(&self) -> Result<FreshStore> {
        let schema = fresh_schema_name();
        let store = open(&self.dsn, &schema).await?;
        let locator = StoreLocator::Postgres { dsn: self.dsn.clone(), schema };
        Ok(FreshStore { store: Arc::new(store), locator: Some(locator) })
    }
}

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

    /// The DSN for another role of the test cluster (`cairnq_pw` with a
    /// password, or `cairnq_noddl`, which may not create anything).
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

fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn server_error(message: String) -> Error {
    Error::Storage { message: format!("test Postgres server: {message}"), source: None, transient: false }
}
