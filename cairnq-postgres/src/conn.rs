//! The store's own connections ([`Connections`]): a checkout is a
//! [`Conn`], a transaction on it a [`Tx`], and both run statements the way
//! the store's mode says ([`Statements`]): prepared once per connection
//! and cached (a direct connection to Postgres), or as unnamed statements
//! with the schema set per transaction (behind a transaction pooler, see
//! [`crate::pooler`]). The flows never know which.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::Result;
use deadpool_postgres::{Client, Pool, Transaction};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::classify;
use crate::exec::Exec;
use crate::options::PostgresOptions;
use crate::pool;
use crate::pooler::{InOrder, Unnamed};

/// How statements run on the store's connections.
#[derive(Debug, Clone)]
pub(crate) enum Statements {
    /// Prepared once per connection and reused (deadpool's statement
    /// cache); the schema is on each connection's search_path.
    Cached,
    /// Pooler mode: nothing outlives a transaction.
    Unnamed(Arc<Unnamed>),
}

impl Statements {
    /// The mode `options` ask for.
    pub(crate) fn of(options: &PostgresOptions) -> Self {
        match options.pooler {
            true => Self::Unnamed(Arc::new(Unnamed::new(options.schema.as_deref()))),
            false => Self::Cached,
        }
    }
}

/// The pool, where it connects (for messages) and the statement mode.
#[derive(Debug, Clone)]
pub(crate) struct Connections {
    pub(crate) pool: Pool,
    pub(crate) endpoint: Option<Arc<str>>,
    statements: Statements,
}

impl Connections {
    pub(crate) fn new(pool: Pool, endpoint: Option<Arc<str>>, statements: Statements) -> Self {
        Self { pool, endpoint, statements }
    }

    /// A pooled connection (see [`pool::checkout`]).
    pub(crate) async fn get(&self) -> Result<Conn> {
        let client = pool::checkout(&self.pool, self.endpoint.as_deref()).await?;
        Ok(Conn { client, statements: self.statements.clone() })
    }
}

/// One checked-out connection; back to the pool when dropped.
pub(crate) struct Conn {
    client: Client,
    statements: Statements,
}

#[async_trait]
impl Exec for Conn {
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        match &self.statements {
            Statements::Cached => {
                let prepared = self.client.prepare_cached(sql).await?;
                self.client.query(&prepared, params).await
            }
            Statements::Unnamed(unnamed) => unnamed.run_alone(&self.client, sql, params).await,
        }
    }
}

impl Conn {
    /// Starts a transaction.
    pub(crate) async fn begin(&mut self) -> Result<Tx<'_>> {
        let tx = self.client.transaction().await.map_err(|e| classify("start a transaction", "begin", e))?;
        Ok(Tx { tx, statements: self.statements.clone(), order: InOrder::default() })
    }
}

/// A transaction on a [`Conn`]; rolled back when dropped uncommitted.
pub(crate) struct Tx<'a> {
    tx: Transaction<'a>,
    statements: Statements,
    /// Pooler mode: its statements' turns to be sent.
    order: InOrder,
}

#[async_trait]
impl Exec for Tx<'_> {
    async fn run(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        match &self.statements {
            Statements::Cached => {
                let prepared = self.tx.prepare_cached(sql).await?;
                self.tx.query(&prepared, params).await
            }
            Statements::Unnamed(unnamed) => unnamed.run_in(&*self.tx, &self.order, sql, params).await,
        }
    }
}

impl Tx<'_> {
    /// Runs SQL text as it is (a migration's statements), after the
    /// schema is set in pooler mode.
    pub(crate) async fn batch_execute(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        if let Statements::Unnamed(unnamed) = &self.statements {
            unnamed.ensure_path(&*self.tx, &self.order).await?;
        }
        self.tx.batch_execute(sql).await
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<()> {
        self.tx.commit().await.map_err(|e| classify("commit the transaction", "commit", e))
    }
}
