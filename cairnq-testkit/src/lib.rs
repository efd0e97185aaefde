//! cairnq's conformance suite, public so every backend — ours and third
//! parties' — is held to the same behaviour by the same code.
//!
//! A backend provides a [`BackendFactory`]: a fresh, isolated store per
//! scenario or test. The scenario runner ([`scenario`]) interprets the
//! language-neutral JSON scenarios of CONFORMANCE.md; the worker suite
//! ([`worker_suite`]) runs real worker loops and real processes against it.
//! `sqlite` and `postgres` (features, off by default so a backend author
//! compiles no driver) hold the factories for our own backends; [`memory`]
//! runs [`MemoryStore`](memory::MemoryStore) from `cairnq-memory`, a
//! reference backend with no SQL (the worked example of the backend-author
//! guide, and a test double that is not durable).
//!
//! What every test crate of the workspace shares is here once too: the
//! child-process protocol ([`child`]: a worker, submitter or opener in a
//! process of its own) and the helpers ([`support`]: `eventually`,
//! `finished`, `count`, ...).
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "Writing a backend" (`docs/src/writing-a-backend.md`) is about
//! this crate.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::{Result, Store};

pub mod child;
mod conformance_tests;
pub mod forwarding;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod scenario;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod support;
pub mod telemetry;
#[cfg(unix)]
pub mod unprivileged;
pub mod worker_suite;

/// Where a fresh store lives, so another process can open the same one
/// (crash tests kill a worker process and recover its leases).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocator {
    /// A SQLite database file.
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
    /// A Postgres database and schema.
    Postgres {
        /// Connection string.
        dsn: String,
        /// The schema holding the cairnq tables.
        schema: String,
    },
}

/// A store made for one scenario or test.
pub struct FreshStore {
    /// The store, empty and migrated.
    pub store: Arc<dyn Store>,
    /// How another process opens the same database, when it can.
    pub locator: Option<StoreLocator>,
}

/// Makes a fresh, isolated, empty store for each scenario or test: a new
/// SQLite file in a temp dir, a fresh Postgres schema, or your backend's own.
#[async_trait]
pub trait BackendFactory: Send + Sync {
    /// A short name for messages, e.g. `sqlite`.
    fn name(&self) -> &str;

    /// A fresh, empty, migrated store.
    async fn fresh(&self) -> Result<FreshStore>;
}
