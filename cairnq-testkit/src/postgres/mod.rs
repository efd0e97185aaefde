//! The [`BackendFactory`] of our Postgres backend, the throwaway server the
//! Postgres tests run against ([`TestServer`]), and roles a test makes for
//! itself ([`TestRole`]).
//!
//! Every store is a fresh schema in one test database, so scenarios never
//! see each other's rows. The server is `CAIRNQ_TEST_PG_DSN` when set (CI
//! and `cargo xtask test` set it); otherwise the first caller in a process
//! starts a cluster with `scripts/pg-test-server.sh` in
//! `<workspace>/target/pg-test` (idempotent: an already running one is
//! reused), so plain `cargo test` works on a machine with Postgres
//! installed.

mod pooler;
mod role;
mod server;

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use cairnq_core::Result;
use cairnq_postgres::{PostgresOptions, PostgresStore};

pub use pooler::{REQUIRE_ENV as REQUIRE_PGBOUNCER_ENV, TestPooler};
pub use role::TestRole;
pub use server::TestServer;
use server::workspace_root;

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
/// assert_eq!(dsn_with_user(dsn, "alice:x"), "postgres://alice:x@127.0.0.1:54329/cairnq_test");
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
    PostgresStore::connect_with(dsn, test_options().schema(schema)).await
}

/// What test stores connect with: a small pool, since many tests share one
/// server.
fn test_options() -> PostgresOptions {
    PostgresOptions::new().pool_size(4)
}

/// A plain tokio-postgres session on `dsn`, for what a test does beside
/// cairnq (setup, raw reads, catalogs). Panics when it cannot connect: a
/// helper for tests, which have nothing better to do then.
pub async fn raw(dsn: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {dsn}: {e}"));
    tokio::spawn(connection);
    client
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
    options: PostgresOptions,
}

impl PostgresFactory {
    /// Stores on the server at `dsn` (a role that may create schemas).
    pub fn new(dsn: impl Into<String>) -> Self {
        Self { dsn: dsn.into(), options: test_options() }
    }

    /// Connects every fresh store with `options` (their schema replaced by
    /// the fresh one) instead of the tests' small pool: the benchmarks
    /// measure what an application's defaults give.
    pub fn options(mut self, options: PostgresOptions) -> Self {
        self.options = options;
        self
    }

    /// Stores on [`test_dsn`]'s server.
    pub fn from_test_server() -> Result<Self> {
        Ok(Self::new(test_dsn()?))
    }

    /// Stores in pooler mode (`PostgresOptions::pooler`) through the
    /// shared [`TestPooler`] (PgBouncer in transaction mode) in front of
    /// [`test_dsn`]'s server. Where `pgbouncer` is not installed (and
    /// [`REQUIRE_PGBOUNCER_ENV`] is unset), pooler mode straight to the
    /// server, said on stderr: the mode's statements are still what runs.
    /// LISTEN goes to the server directly (`listen_dsn`).
    /// Its stores name no [`StoreLocator`]: a child process would not
    /// know to connect in pooler mode, so the tests that need one skip.
    pub fn through_test_pooler() -> Result<Self> {
        let dsn = match TestPooler::shared()? {
            Some(pooler) => pooler.dsn().to_string(),
            None => {
                eprintln!("pooler mode straight to Postgres: there is no PgBouncer here");
                test_dsn()?
            }
        };
        // LISTEN on a direct connection, as the book says to deploy behind a
        // pooler; the polling-only mode has tests of its own
        // (cairnq-postgres/tests/it/pooler.rs).
        Ok(Self::new(dsn).options(test_options().pooler(true).listen_dsn(test_dsn()?)))
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
        let store = PostgresStore::connect_with(&self.dsn, self.options.clone().schema(&schema)).await?;
        let locator = (!self.options.pooler).then(|| StoreLocator::Postgres { dsn: self.dsn.clone(), schema });
        Ok(FreshStore { store: Arc::new(store), locator })
    }
}
