//! The Postgres schemas a benchmark run made, dropped when its workload is
//! done. A burn-down leaves a table of tens of thousands of dead row
//! versions; left in place, the server's autovacuum cleans it while the
//! next run of an interleaved comparison measures, and a day of
//! comparisons left 9 GB behind. (Tests keep their schemas for a
//! post-mortem; `scripts/pg-test-server.sh start` sweeps those.)

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use cairnq_core::Result;
use cairnq_testkit::{BackendFactory, FreshStore, StoreLocator};

/// A factory whose fresh Postgres schemas are remembered, for
/// [`drop_made`](Self::drop_made) to drop.
pub(crate) struct SchemaCleanup {
    inner: Box<dyn BackendFactory>,
    /// `(dsn, schema)` of each fresh store that names a schema.
    made: Mutex<Vec<(String, String)>>,
}

impl SchemaCleanup {
    pub(crate) fn new(inner: Box<dyn BackendFactory>) -> Self {
        Self { inner, made: Mutex::default() }
    }

    /// Drops every schema made so far (the workload is done with them),
    /// over one connection per server; what could not be dropped, in
    /// words.
    pub(crate) async fn drop_made(&self) -> std::result::Result<(), String> {
        let mut made = std::mem::take(&mut *self.made.lock().unwrap_or_else(PoisonError::into_inner));
        made.sort();
        for on_server in made.chunk_by(|a, b| a.0 == b.0) {
            drop_schemas(&on_server[0].0, on_server.iter().map(|(_, schema)| schema.as_str())).await?;
        }
        Ok(())
    }
}

/// Drops `schemas` on the server at `dsn`, each in a statement of its own
/// (one transaction dropping hundreds runs out of lock slots).
async fn drop_schemas<'s>(dsn: &str, schemas: impl Iterator<Item = &'s str>) -> std::result::Result<(), String> {
    let (client, connection) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("cannot connect to drop the bench's schemas: {e}"))?;
    let connection = tokio::spawn(connection);
    let dropped = async {
        for schema in schemas {
            let quoted = schema.replace('"', "\"\"");
            let statement = format!("drop schema if exists \"{quoted}\" cascade");
            client.batch_execute(&statement).await.map_err(|e| format!("cannot drop schema {schema}: {e}"))?;
        }
        Ok(())
    }
    .await;
    drop(client);
    let _ = connection.await;
    dropped
}

#[async_trait]
impl BackendFactory for SchemaCleanup {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn fresh(&self) -> Result<FreshStore> {
        let fresh = self.inner.fresh().await?;
        if let Some(StoreLocator::Postgres { dsn, schema }) = &fresh.locator {
            self.made.lock().unwrap_or_else(PoisonError::into_inner).push((dsn.clone(), schema.clone()));
        }
        Ok(fresh)
    }
}
