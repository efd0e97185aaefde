//! Looking at a database without connecting a store to it: the migration
//! ledger and the meta rows, for operators' tools (`cairnq migrate status`, `cairnq doctor`).
//! A store's connect installs; this only reads, on one connection.

use std::collections::BTreeMap;

use cairnq_core::{MigrationStatus, Result};
use cairnq_protocol::postgres;
use cairnq_sql::{Query, Sql};

use crate::conn::{Conn, Connections, Statements};
use crate::exec::rows;
use crate::migrate::table_exists;
use crate::options::PostgresOptions;
use crate::row::col;
use crate::{pool, tls};

/// One pooled connection with the options' schema on its search_path
/// (whether or not the schema exists: nothing is created), running
/// statements as the options' mode says (pooler mode: unnamed, the schema
/// set per transaction).
pub(crate) async fn connect_once(dsn: &str, options: &PostgresOptions) -> Result<Conn> {
    let options = options.clone().pool_size(1).listen(false);
    options.validate()?;
    let config = pool::pg_config(dsn, &options)?;
    let endpoint = pool::endpoint(&config).map(Into::into);
    let pool = pool::build(config, tls::connector(&options)?, &options)?;
    Connections::new(pool, endpoint, Statements::of(&options)).get().await
}

/// The ledger this connection reaches, merged with the shipped migrations.
pub(crate) async fn ledger(client: &Conn) -> Result<Vec<MigrationStatus>> {
    let shipped: Vec<_> = postgres::MIGRATIONS.iter().map(|m| (m.file_name, m.sql)).collect();
    Ok(MigrationStatus::merge(ledger_entries(client).await?.unwrap_or_default(), &shipped))
}

/// The ledger's entries (name, applied_at_ms); `None` when this connection
/// reaches no ledger table.
pub(crate) async fn ledger_entries(client: &Conn) -> Result<Option<Vec<(String, i64)>>> {
    if !table_exists(client, "cairnq_migrations").await? {
        return Ok(None);
    }
    let entries = rows(client, &Query::new(Sql::ReadMigrationLedger)).await?;
    let ledger = entries
        .iter()
        .map(|row| Ok((col::<String>(row, "name")?, col::<i64>(row, "applied_at_ms")?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(ledger))
}

/// Every row of the `cairnq_meta` this connection reaches; none without
/// such a table.
pub(crate) async fn meta(client: &Conn) -> Result<BTreeMap<String, String>> {
    if !table_exists(client, "cairnq_meta").await? {
        return Ok(BTreeMap::new());
    }
    let found = rows(client, &Query::new(Sql::ReadAllMeta)).await?;
    found.iter().map(|row| Ok((col::<String>(row, "key")?, col::<String>(row, "value")?))).collect()
}
