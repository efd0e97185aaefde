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

    /// Drops every schema made so far (the workload is done with them);
    /// what could not be dropped, in words.
    pub(crate) async fn drop_made(&self) -> std::result::Result<(), String> {
        let made = std::mem::take(&mut *self.made.lock().unwrap_or_else(PoisonError::into_inner));
        for (dsn, schema) in made {
            let (client, connection) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("cannot connect to drop schema {schema}: {e}"))?;
            let connection = tokio::spawn(connection);
            let quoted = schema.replace('"', "\"\"");
            let dropped = client.batch_execute(&format!("drop schema if exists \"{quoted}\" cascade")).await;
            drop(client);
            let _ = connection.await;
            dropped.map_err(|e| format!("cannot drop schema {schema}: {e}"))?;
        }
        Ok(())
    }
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
