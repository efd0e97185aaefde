//! The executor seam: where a statement runs.
//!
//! Operations are written once against [`Exec`] and run unchanged on a
//! pooled connection, inside a pooled transaction (`conn`: statements
//! cached per connection, or unnamed in pooler mode), or inside a session
//! the application already has ([`AppSession`] over its own tokio-postgres
//! client or transaction), which is how `complete_in` settles a task in the
//! same transaction as the handler's own writes.

use async_trait::async_trait;
use cairnq_core::{Error, Result, could_not};
use cairnq_protocol::postgres;
use cairnq_sql::{Query, purpose};
use futures::future::BoxFuture;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::classify;
use crate::sql::PgArg;

/// Something that runs SQL with positional parameters.
#[async_trait]
pub(crate) trait Exec: Sync {
    /// Runs `sql` and returns every row it produced.
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error>;
}

/// A session of the application's that
/// [`PostgresStore::complete_in`](crate::PostgresStore::complete_in) can
/// settle in: a tokio-postgres [`Client`](tokio_postgres::Client) or
/// [`Transaction`](tokio_postgres::Transaction), or the same from a
/// deadpool pool ([`deadpool_postgres::Client`],
/// [`deadpool_postgres::Transaction`]). Sealed: those four are all, and
/// they cover other pools too: a bb8-postgres (or any pool's) connection
/// derefs to a tokio-postgres `Client`, so pass its transaction, or
/// `&*conn`.
/// Statements run as unnamed prepared statements: the session is not ours
/// to fill with cached ones.
pub trait Session: Sync + sealed::Sealed {
    #[doc(hidden)]
    fn session_query<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [&'a (dyn ToSql + Sync)],
    ) -> BoxFuture<'a, Result<Vec<Row>, tokio_postgres::Error>>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for tokio_postgres::Client {}
    impl Sealed for tokio_postgres::Transaction<'_> {}
    impl Sealed for deadpool_postgres::Client {}
    impl Sealed for deadpool_postgres::Transaction<'_> {}
}

/// Each session type reaches a tokio-postgres client or transaction,
/// directly or through deadpool's `Deref`.
macro_rules! session {
    ($ty:ty, $inner:ty) => {
        impl Session for $ty {
            fn session_query<'a>(
                &'a self,
                sql: &'a str,
                params: &'a [&'a (dyn ToSql + Sync)],
            ) -> BoxFuture<'a, Result<Vec<Row>, tokio_postgres::Error>> {
                let inner: &$inner = self;
                Box::pin(inner.query(sql, params))
            }
        }
    };
}

session!(tokio_postgres::Client, tokio_postgres::Client);
session!(tokio_postgres::Transaction<'_>, tokio_postgres::Transaction<'_>);
session!(deadpool_postgres::Client, tokio_postgres::Client);
session!(deadpool_postgres::Transaction<'_>, tokio_postgres::Transaction<'_>);

/// An application's [`Session`], borrowed for one operation.
pub(crate) struct AppSession<'a, S: ?Sized>(pub(crate) &'a S);

#[async_trait]
impl<S: Session + ?Sized> Exec for AppSession<'_, S> {
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        self.0.session_query(sql, params).await
    }
}

/// Runs a protocol statement (the rendering of the query's flags) and
/// returns its rows.
pub(crate) async fn rows(exec: &impl Exec, query: &Query) -> Result<Vec<Row>> {
    let statement = postgres::statement(query.sql);
    let rendering = statement.rendering(&query.flags).map_err(|e| Error::Storage {
        message: e.to_string(),
        source: None,
        transient: false,
    })?;
    let args = rendering
        .params
        .iter()
        .map(|name| {
            query.get(name).map(PgArg).ok_or_else(|| Error::Storage {
                message: format!("statement {} needs :{name}, which was not bound", statement.name),
                source: None,
                transient: false,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
    exec.run(rendering.sql, &params).await.map_err(|e| classify(purpose(query.sql), statement.name, e))
}

/// Like [`rows`], for a statement that yields at most one row.
pub(crate) async fn opt_row(exec: &impl Exec, query: &Query) -> Result<Option<Row>> {
    Ok(rows(exec, query).await?.into_iter().next())
}

/// Like [`rows`], for a statement that always yields one row.
pub(crate) async fn one_row(exec: &impl Exec, query: &Query) -> Result<Row> {
    opt_row(exec, query)
        .await?
        .ok_or_else(|| Error::corrupt_row(could_not(purpose(query.sql), "the database answered no row")))
}

/// Like [`rows`], for a statement that answers one boolean (`exists`, ...).
pub(crate) async fn answer(exec: &impl Exec, query: &Query) -> Result<bool> {
    let row = one_row(exec, query).await?;
    let doing = purpose(query.sql);
    row.try_get(0).map_err(|e| Error::corrupt_row(could_not(doing, format!("the database answered no boolean: {e}"))))
}

/// Runs Postgres-only SQL (no protocol counterpart) with positional
/// parameters.
pub(crate) async fn run_sql(
    exec: &impl Exec,
    doing: &str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    exec.run(sql, params).await.map_err(|e| classify(doing, sql, e))
}
