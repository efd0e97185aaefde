//! What sits between the store and Postgres, and who is connected: for
//! `cairnq doctor`. Reads only, on connections of their own.
//!
//! A transaction pooler cannot be asked what it is through an ordinary
//! connection (PgBouncer's `SHOW VERSION` answers only on its admin
//! console, which needs an admin user), so the probe asks the one thing a
//! direct connection always does and a transaction pooler cannot: pass a
//! startup `options` setting through to the session. PgBouncer refuses the
//! parameter outright (`unsupported startup parameter: options`) unless
//! told to ignore it, and then the setting never reaches the server; both
//! are read as "a pooler answers". A session-mode pooler that forwards
//! `options` reads as direct, which is right: session state works there.

use cairnq_core::Result;
use tokio_postgres::SimpleQueryMessage;

use crate::exec::run_sql;
use crate::inspect::connect_once;
use crate::options::PostgresOptions;
use crate::row::col;
use crate::{pool, tls};

/// The setting the probe sends at startup and reads back.
const PROBE: &str = "cairnq.session_probe";

/// The database's connections from cairnq processes, by application name.
const CONNECTIONS: &str = "select application_name as name, count(*) as total, \
     count(*) filter (where state = 'active') as active, \
     count(*) filter (where state like 'idle%') as idle \
     from pg_stat_activity where datname = current_database() and application_name like 'cairnq%' \
     group by application_name order by application_name";

/// How many connections one application name holds on the database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppConnections {
    /// The `application_name` (`cairnq-rs <command>` for the `cairnq`
    /// binary, `cairnq-rs` for a library store by default).
    pub application_name: String,
    /// Server connections with that name.
    pub total: u64,
    /// Of those, running a statement now.
    pub active: u64,
    /// Of those, idle (in a transaction or not).
    pub idle: u64,
}

/// `Some(what answered)` when a connection pooler answers at `dsn`
/// instead of Postgres (see the module docs); `None` for a direct session.
pub(crate) async fn pooler_in_front(dsn: &str, options: &PostgresOptions) -> Result<Option<String>> {
    let mut config = pool::pg_config(dsn, options)?;
    config.options(format!("-c {PROBE}=on"));
    let (client, connection) = match config.connect(tls::connector(options)?).await {
        Ok(connected) => connected,
        Err(error) => {
            let said = error.as_db_error().map(|db| db.message().to_string()).unwrap_or_else(|| error.to_string());
            if said.contains("unsupported startup parameter") {
                return Ok(Some(format!("PgBouncer (it refused the startup parameter `options`: {said})")));
            }
            // Said as every other connection failure is: where it tried.
            let whom = pool::endpoint(&config)
                .map_or("connect to Postgres".to_string(), |at| format!("connect to Postgres at {at}"));
            return Err(crate::error::classify(&whom, "connect", error));
        }
    };
    let driver = tokio::spawn(connection);
    let read = client.simple_query(&format!("select current_setting('{PROBE}', true)")).await;
    driver.abort();
    let read = read.map_err(|e| crate::error::classify("probe the server", "current_setting", e))?;
    let value = read.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => Some(row.get(0).map(str::to_string)),
        _ => None,
    });
    Ok(match value.flatten().as_deref() {
        Some("on") => None,
        _ => Some("a connection pooler (a startup setting did not reach the server session)".to_string()),
    })
}

/// The connections the database has from cairnq processes.
pub(crate) async fn connections(dsn: &str, options: &PostgresOptions) -> Result<Vec<AppConnections>> {
    let client = connect_once(dsn, options).await?;
    let rows = run_sql(&client, "read pg_stat_activity", CONNECTIONS, &[]).await?;
    let count = |row: &tokio_postgres::Row, name| col::<i64>(row, name).map(|n| u64::try_from(n).unwrap_or(0));
    rows.iter()
        .map(|row| {
            Ok(AppConnections {
                application_name: col(row, "name")?,
                total: count(row, "total")?,
                active: count(row, "active")?,
                idle: count(row, "idle")?,
            })
        })
        .collect()
}
