//! The [`BackendFactory`] of our SQLite backend: every store is a new
//! database file in a temp directory the factory owns, so scenarios never
//! see each other's rows and the files vanish with the factory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use cairnq_core::{Error, Result};
use cairnq_sqlite::SqliteStore;
use tempfile::TempDir;

use crate::{BackendFactory, FreshStore, StoreLocator};

/// Fresh SQLite stores, one file each, in a temp directory removed on drop.
///
/// ```no_run
/// # async fn demo() -> cairnq_core::Result<()> {
/// let factory = cairnq_testkit::sqlite::SqliteFactory::new()?;
/// cairnq_testkit::scenario::assert_conformance(&factory).await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SqliteFactory {
    dir: TempDir,
    opened: AtomicUsize,
}

impl SqliteFactory {
    /// A factory over a new temp directory.
    pub fn new() -> Result<Self> {
        Self::new_in(std::env::temp_dir())
    }

    /// A factory over a new directory inside `parent` (removed on drop as
    /// well): where the files' disk matters, as for benchmarks.
    pub fn new_in(parent: impl AsRef<Path>) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("cairnq-stores-")
            .tempdir_in(parent)
            .map_err(|e| Error::storage("cannot create a temp directory for SQLite stores", e))?;
        Ok(Self { dir, opened: AtomicUsize::new(0) })
    }

    /// The path the next store will get.
    fn next_path(&self) -> PathBuf {
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        self.dir.path().join(format!("store-{n}.db"))
    }
}

#[async_trait]
impl BackendFactory for SqliteFactory {
    fn name(&self) -> &str {
        "sqlite"
    }

    async fn fresh(&self) -> Result<FreshStore> {
        let path = self.next_path();
        let store = SqliteStore::open(&path).await?;
        Ok(FreshStore { store: Arc::new(store), locator: Some(StoreLocator::Sqlite { path }) })
    }
}
