//! The executor seam: where a statement runs.
//!
//! Operations are written once against [`Exec`] and run unchanged on a
//! pooled connection, inside a pooled transaction, or inside a session the
//! application already has ([`AppSession`] over its own tokio-postgres
//! client or transaction), which is how `complete_in` settles a task in the
//! same transaction as the handler's own writes. Pooled connections prepare
//! each rendered statement once and reuse it (deadpool's per-connection
//! statement cache).

use async_trait::async_trait;
use cairnq_core::{Error, Result};
use cairnq_protocol::Statement;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::classify;
use crate::sql::Args;

/// Something that runs SQL with positional parameters.
#[async_trait]
pub(crate) trait Exec: Sync {
    /// Runs `sql` and returns every row it produced.
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error>;
}

#[async_trait]
impl<C: deadpool_postgres::GenericClient> Exec for C {
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        let prepared = self.prepare_cached(sql).await?;
        self.query(&prepared, params).await
    }
}

/// An application's own tokio-postgres client or transaction, borrowed for
/// one operation. Statements run as unnamed prepared statements: the
/// session is not ours to fill with cached ones.
pub(crate) struct AppSession<'a, C>(pub(crate) &'a C);

#[async_trait]
impl<C: tokio_postgres::GenericClient + Sync> Exec for AppSession<'_, C> {
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        self.0.query(sql, params).await
    }
}

/// Runs a protocol statement with `flags` on and returns its rows.
pub(crate) async fn rows(
    exec: &impl Exec,
    statement: &'static Statement,
    flags: &[&str],
    args: &Args,
) -> Result<Vec<Row>> {
    let rendering = statement.rendering(flags).map_err(|e| Error::Storage {
        message: e.to_string(),
        source: None,
        transient: false,
    })?;
    let params = args.ordered(statement.name, rendering.params)?;
    exec.run(rendering.sql, &params).await.map_err(|e| classify(statement.name, e))
}

/// Like [`rows`], for a statement that yields at most one row.
pub(crate) async fn opt_row(
    exec: &impl Exec,
    statement: &'static Statement,
    flags: &[&str],
    args: &Args,
) -> Result<Option<Row>> {
    Ok(rows(exec, statement, flags, args).await?.into_iter().next())
}

/// Like [`rows`], for a statement that always yields one row.
pub(crate) async fn one_row(
    exec: &impl Exec,
    statement: &'static Statement,
    flags: &[&str],
    args: &Args,
) -> Result<Row> {
    opt_row(exec, statement, flags, args)
        .await?
        .ok_or_else(|| Error::corrupt_row(format!("statement {} returned no row", statement.name)))
}

/// Like [`rows`], for a statement that answers one boolean (`exists`, ...).
pub(crate) async fn answer(
    exec: &impl Exec,
    statement: &'static Statement,
    flags: &[&str],
    args: &Args,
) -> Result<bool> {
    let row = one_row(exec, statement, flags, args).await?;
    row.try_get(0).map_err(|e| Error::corrupt_row(format!("statement {} answered no boolean: {e}", statement.name)))
}

/// Runs Postgres-only SQL (no protocol counterpart) with positional
/// parameters.
pub(crate) async fn run_sql(
    exec: &impl Exec,
    context: &str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    exec.run(sql, params).await.map_err(|e| classify(context, e))
}
