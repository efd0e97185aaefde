//! The connection pool: a DSN parsed once, connections opened on demand
//! (bounded by the connect timeout) up to `pool_size`, the schema put on
//! each connection's search_path before first use (not in pooler mode,
//! which sets it per transaction), connections idle for `idle_timeout`
//! closed, and closed connections replaced — after a server restart the
//! next checkout opens a fresh one.

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Error, Result};
use deadpool_postgres::{Client, Hook, HookError, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

use crate::error::classify_pool;
use crate::options::{PostgresOptions, quote_ident};
use crate::tls::Connector;

/// How long a checkout may wait for a free connection before the pool
/// reports a (transient) timeout; an unbounded wait would hide a leak.
const CHECKOUT_WAIT: Duration = Duration::from_secs(60);

/// Parses `dsn` (URL or key=value form) and applies the options' timeout.
pub(crate) fn pg_config(dsn: &str, options: &PostgresOptions) -> Result<tokio_postgres::Config> {
    let mut config: tokio_postgres::Config = dsn.parse().map_err(|e: tokio_postgres::Error| {
        // The driver says only "invalid connection string"; what is
        // wrong with it (a port that is no number, ...) is its source.
        let why = std::error::Error::source(&e).map_or_else(String::new, |cause| format!(": {cause}"));
        Error::validation("dsn", format!("not a Postgres connection string{why}"))
    })?;
    config.connect_timeout(options.connect_timeout);
    if config.get_application_name().is_none() {
        config.application_name(options.application_name.as_deref().unwrap_or("cairnq-rs"));
    }
    Ok(config)
}

/// A pool over `config`; nothing connects until the first checkout.
pub(crate) fn build(config: tokio_postgres::Config, connector: Connector, options: &PostgresOptions) -> Result<Pool> {
    // Fast recycling: a checkout only checks the connection is not closed;
    // a connection that died mid-statement surfaces as a transient error and
    // is replaced on the next checkout.
    let manager = Manager::from_config(config, connector, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    let mut builder = Pool::builder(manager)
        .max_size(options.pool_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(CHECKOUT_WAIT))
        .create_timeout(Some(options.connect_timeout))
        .recycle_timeout(Some(options.connect_timeout));
    // Pooler mode keeps no session state: the schema is set per
    // transaction instead (`pooler`).
    if let Some(schema) = options.schema.as_ref().filter(|_| !options.pooler) {
        builder = builder.post_create(search_path_hook(quote_ident(schema)));
    }
    builder.build().map_err(|e| Error::Storage {
        message: format!("cannot build the pool: {e}"),
        source: None,
        transient: false,
    })
}

fn search_path_hook(quoted_schema: String) -> Hook {
    let quoted_schema: Arc<str> = quoted_schema.into();
    Hook::async_fn(move |client, _| {
        let path = Arc::clone(&quoted_schema);
        Box::pin(async move {
            client
                .execute("select set_config('search_path', $1, false)", &[&&*path])
                .await
                .map(|_| ())
                .map_err(HookError::Backend)
        })
    })
}

/// How often the idle connections are looked for.
const IDLE_SWEEP: Duration = Duration::from_secs(5);

/// The task closing a pool's idle connections; stopped when dropped.
#[derive(Debug)]
pub(crate) struct IdleSweeper(tokio::task::JoinHandle<()>);

impl IdleSweeper {
    pub(crate) fn stop(&self) {
        self.0.abort();
    }
}

impl Drop for IdleSweeper {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Closes `pool`'s connections unused for `idle` or longer, every few
/// seconds, until stopped (with the store): a process that went quiet
/// gives its server connections back.
pub(crate) fn release_idle(pool: Pool, idle: Duration) -> IdleSweeper {
    IdleSweeper(tokio::spawn(async move {
        let mut every = tokio::time::interval(IDLE_SWEEP.min(idle));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            // A checked-out connection is not in the pool: only idle ones are looked at.
            pool.retain(|_, metrics| metrics.last_used() < idle);
        }
    }))
}

/// Where `config` points, for people: `host:port` (every host, comma
/// separated; a Unix socket by its directory and port). `None` when the
/// DSN names no host (libpq's default socket).
pub(crate) fn endpoint(config: &tokio_postgres::Config) -> Option<String> {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            // One port for every host, or one each (libpq's rule); 5432 by default.
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                tokio_postgres::config::Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    (!hosts.is_empty()).then(|| hosts.join(", "))
}

/// A pooled connection from the server at `endpoint` (named in the error
/// when it cannot be reached: `connect to Postgres at 127.0.0.1:5432: ...`).
pub(crate) async fn checkout(pool: &Pool, endpoint: Option<&str>) -> Result<Client> {
    pool.get().await.map_err(|e| match endpoint {
        Some(endpoint) => classify_pool(&format!("connect to Postgres at {endpoint}"), e),
        None => classify_pool("connect to Postgres", e),
    })
}
