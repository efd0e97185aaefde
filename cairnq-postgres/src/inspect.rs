//! Looking at a database without connecting a store to it: the migration
//! ledger, for operators' tools (`cairnq migrate status`, `cairnq doctor`).
//! A store's connect installs; this only reads, on one connection.

use cairnq_core::backend::{Query, Sql};
use cairnq_core::{MigrationStatus, Result};
use cairnq_protocol::postgres;
use deadpool_postgres::Client;

use crate::exec::rows;
use crate::migrate::table_exists;
use crate::options::PostgresOptions;
use crate::row::col;
use crate::{pool, tls};

/// One pooled connection with the options' schema on its search_path
/// (whether or not the schema exists: nothing is created).
pub(crate) async fn connect_once(dsn: &str, options: &PostgresOptions) -> Result<Client> {
    let options = options.clone().pool_size(1).listen(false);
    options.validate()?;
    let config = pool::pg_config(dsn, &options)?;
    let pool = pool::build(config, tls::connector(&options)?, &options)?;
    pool::checkout(&pool).await
}

/// The ledger this connection reaches, merged with the shipped migrations.
pub(crate) async fn ledger(client: &Client) -> Result<Vec<MigrationStatus>> {
    let shipped: Vec<_> = postgres::MIGRATIONS.iter().map(|m| (m.file_name, m.sql)).collect();
    if !table_exists(client, "cairnq_migrations").await? {
        return Ok(MigrationStatus::merge(Vec::new(), &shipped));
    }
    let entries = rows(client, &Query::new(Sql::ReadMigrationLedger)).await?;
    let ledger = entries
        .iter()
        .map(|row| Ok((col::<String>(row, "name")?, col::<i64>(row, "applied_at_ms")?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(MigrationStatus::merge(ledger, &shipped))
}
