//! [`MemoryStore`] (from `cairnq-memory`, the reference backend with no
//! SQL) as a [`BackendFactory`], so the conformance suite and the
//! `cairnq-conformance` binary run on it like on any other backend.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::Result;
pub use cairnq_memory::MemoryStore;

use crate::{BackendFactory, FreshStore};

/// The [`BackendFactory`] of [`MemoryStore`]: a new, empty store per
/// scenario or test. Its stores live in this process only, so it gives no
/// [`StoreLocator`](crate::StoreLocator), and the worker-suite tests that
/// need a second process skip themselves with a message.
///
/// ```no_run
/// # async fn demo() {
/// let report = cairnq_testkit::scenario::run_all(&cairnq_testkit::memory::MemoryFactory::new()).await;
/// report.assert_all_passed();
/// # }
/// ```
#[derive(Debug, Default)]
pub struct MemoryFactory;

impl MemoryFactory {
    /// A factory of fresh in-memory stores.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl BackendFactory for MemoryFactory {
    fn name(&self) -> &str {
        "memory"
    }

    async fn fresh(&self) -> Result<FreshStore> {
        Ok(FreshStore { store: Arc::new(MemoryStore::new()), locator: None })
    }
}
