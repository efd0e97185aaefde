//! How a [`PostgresStore`](crate::PostgresStore) connects: schema, pool
//! size, connect timeout, push wakeups.

use std::time::Duration;

use cairnq_core::{Error, Install, Result};

/// How long a pooled connection may sit unused by default.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Connection options. `Default`: the search_path's own schema, a pool of
/// at most 10 connections, each closed after 60 s unused, a 10 s connect
/// timeout, LISTEN/NOTIFY wakeups on, the schema and tables created and
/// migrated when needed ([`Install::Migrate`]), direct connections to
/// Postgres (not [`pooler`](Self::pooler) mode), application name
/// `cairnq-rs` (unless the DSN names one).
///
/// ```
/// use std::time::Duration;
/// use cairnq_postgres::PostgresOptions;
/// let options = PostgresOptions::new().schema("jobs").pool_size(4).connect_timeout(Duration::from_secs(3));
/// assert_eq!(options.schema.as_deref(), Some("jobs"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The schema holding the cairnq tables: created when absent and put on
    /// the search_path of every pooled connection. `None`: whatever the
    /// DSN's search_path resolves to (refused with `SchemaMismatch` when
    /// that would create a second installation beside an existing one).
    pub schema: Option<String>,
    /// Most connections the pool opens (>= 1). The LISTEN connection is
    /// extra. Not used by [`PostgresStore::from_pool`](crate::PostgresStore::from_pool)
    /// (the application's pool has its own size).
    pub pool_size: usize,
    /// Bound on opening one connection (TCP, TLS, authentication).
    pub connect_timeout: Duration,
    /// Hold one LISTEN connection so waits end as soon as a relevant row
    /// changes. Off: waits just sleep their poll interval (correctness never
    /// depends on a notification).
    pub listen: bool,
    /// Whether connecting may create the schema and apply migrations
    /// ([`Install::Migrate`], the default) or only uses an installation
    /// that is there already ([`Install::Existing`]: none is refused with
    /// [`Error::Unusable`], and nothing is written).
    pub install: Install,
    /// Where the LISTEN connection connects, when not where the pool does.
    /// With [`PostgresStore::connect`](crate::PostgresStore::connect):
    /// `None` uses the store's DSN; set it when the pool goes through a
    /// transaction pooler and LISTEN must reach Postgres directly. With
    /// [`PostgresStore::from_pool`](crate::PostgresStore::from_pool): the
    /// pool cannot lend a connection for LISTEN (its connections drop
    /// notifications, and it does not say how it connects), so `None`
    /// means no LISTEN connection: the store polls.
    pub listen_dsn: Option<String>,
    /// Pooler mode: the store connects through a transaction-mode
    /// connection pooler (PgBouncer's `pool_mode = transaction`, or a
    /// managed pooler that works the same way), so it keeps nothing in a
    /// session that must outlive a transaction: statements run unnamed
    /// (no named prepared statements), the schema is set with `SET LOCAL`
    /// inside each transaction (never a session search_path), advisory
    /// locks are transaction-scoped. LISTEN cannot work through such a
    /// pooler: without [`listen_dsn`](Self::listen_dsn) (a direct
    /// connection) the store opens no LISTEN connection and polls, and
    /// [`Notifications::lost`](cairnq_core::Notifications::lost) says so
    /// at once (a worker logs it once). Costs a little per statement
    /// against a direct connection (BENCHMARKS.md); off by default.
    pub pooler: bool,
    /// How long a pooled connection may sit unused before it is closed
    /// (checked every few seconds), so an idle process holds few server
    /// connections. Not used by [`PostgresStore::from_pool`](crate::PostgresStore::from_pool).
    pub idle_timeout: Duration,
    /// The `application_name` the store's connections report (seen in
    /// `pg_stat_activity`, and by `cairnq doctor`); `None`: `cairnq-rs`.
    /// An `application_name` in the DSN wins.
    pub application_name: Option<String>,
    /// PEM root certificates trusted besides the platform's own (`tls`
    /// feature), e.g. a private CA's.
    #[cfg(feature = "tls")]
    pub tls_root_certificates: Vec<Vec<u8>>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: None,
            pool_size: 10,
            connect_timeout: Duration::from_secs(10),
            listen: true,
            install: Install::Migrate,
            listen_dsn: None,
            pooler: false,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            application_name: None,
            #[cfg(feature = "tls")]
            tls_root_certificates: Vec::new(),
        }
    }
}

impl PostgresOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses (and creates when absent) this schema.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Sets the pool size.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Sets the connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Turns push wakeups on or off.
    pub fn listen(mut self, on: bool) -> Self {
        self.listen = on;
        self
    }

    /// With another installation policy (see [`install`](Self::install)).
    ///
    /// ```
    /// use cairnq_core::Install;
    /// use cairnq_postgres::PostgresOptions;
    /// assert_eq!(PostgresOptions::new().install(Install::Existing).install, Install::Existing);
    /// ```
    pub fn install(mut self, install: Install) -> Self {
        self.install = install;
        self
    }

    /// Connects the LISTEN connection to this DSN (see
    /// [`listen_dsn`](Self::listen_dsn)); it must reach the same database.
    pub fn listen_dsn(mut self, dsn: impl Into<String>) -> Self {
        self.listen_dsn = Some(dsn.into());
        self
    }

    /// Turns pooler mode on or off (see [`pooler`](Self::pooler)).
    ///
    /// ```
    /// use cairnq_postgres::PostgresOptions;
    /// // Through PgBouncer in transaction mode, LISTEN straight to Postgres.
    /// let options = PostgresOptions::new()
    ///     .pooler(true)
    ///     .listen_dsn("postgres://app@db-primary:5432/app");
    /// assert!(options.pooler);
    /// ```
    pub fn pooler(mut self, on: bool) -> Self {
        self.pooler = on;
        self
    }

    /// Closes pooled connections unused for this long (see
    /// [`idle_timeout`](Self::idle_timeout)).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// Reports this `application_name` (see
    /// [`application_name`](Self::application_name)).
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = Some(name.into());
        self
    }

    /// Also trusts this PEM root certificate (`tls` feature).
    #[cfg(feature = "tls")]
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_certificates.push(pem.into());
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.pool_size == 0 {
            return Err(Error::validation("pool_size", "must be at least 1"));
        }
        if self.idle_timeout.is_zero() {
            return Err(Error::validation("idle_timeout", "must be positive"));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::validation("connect_timeout", "must be positive"));
        }
        match &self.schema {
            Some(s) if s.is_empty() || s.len() > 63 || s.contains('\0') => {
                Err(Error::validation("schema", format!("{s:?} is not a Postgres schema name (1..=63 bytes, no NUL)")))
            }
            _ => Ok(()),
        }
    }
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_options_that_cannot_work() {
        assert!(PostgresOptions::new().validate().is_ok());
        assert!(PostgresOptions::new().pool_size(0).validate().is_err());
        assert!(PostgresOptions::new().schema("").validate().is_err());
        assert!(PostgresOptions::new().schema("x".repeat(64)).validate().is_err());
        assert!(PostgresOptions::new().connect_timeout(Duration::ZERO).validate().is_err());
    }

    #[test]
    fn quotes_identifiers() {
        assert_eq!(quote_ident("jobs"), "\"jobs\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
