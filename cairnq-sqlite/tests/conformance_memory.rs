//! The shared conformance suite on SQLite in memory: every built-in
//! scenario and every worker-suite test, each on a fresh `:memory:`
//! database. Tests that need another process to open the same database
//! skip themselves (the factory gives no locator: no other process can
//! reach a database in memory).

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::{BackendFactory, FreshStore};

/// Fresh private databases in memory.
struct InMemory;

#[async_trait]
impl BackendFactory for InMemory {
    fn name(&self) -> &str {
        "sqlite-memory"
    }

    async fn fresh(&self) -> cairnq_core::Result<FreshStore> {
        let store = SqliteStore::open(":memory:").await?;
        Ok(FreshStore { store: Arc::new(store), locator: None })
    }
}

cairnq_testkit::conformance_tests!(InMemory);
