//! The Postgres backend of cairnq.
//!
//! [`PostgresStore`] implements [`cairnq_core::Store`] on a tokio-postgres
//! connection pool, speaking the same tables as the other cairnq SDKs
//! (PROTOCOL.md), so a Python producer and a Rust worker can share one
//! database in either direction.
//!
//! ```no_run
//! # async fn demo() -> cairnq_core::Result<()> {
//! use cairnq_core::{CairnQ, WaitOptions};
//! use cairnq_postgres::PostgresStore;
//! let store = PostgresStore::connect("postgres://app:secret@127.0.0.1:5432/app").await?;
//! let client = CairnQ::new(store);
//! let task = client.submit("resize", &serde_json::json!({"w": 640})).queue("images").await?;
//! let done = client.wait(&task.id, &WaitOptions::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # What it does
//!
//! - **Database clock.** Every statement reads `clock_timestamp()` once, in
//!   milliseconds: hosts do not share a clock, the database does.
//! - **Claims** run lease recovery first, then each draw with
//!   `for update skip locked`, in one transaction.
//! - **Keyed submits** take `pg_advisory_xact_lock(hashtextextended(key, 0))`
//!   before reading the key, so concurrent producers of one key agree.
//! - **Migrations** apply on connect, each in a transaction holding
//!   `lock table cairnq_migrations in exclusive mode`; the ledger records
//!   file names (including the Postgres-only `0003_notify.sql`, the trigger
//!   behind push wakeups). A database of another `protocol_version` is
//!   refused before anything is written.
//! - **Schemas.** [`PostgresOptions::schema`] creates the schema when absent
//!   and sets `search_path` on every pooled connection. Without it, a
//!   connection whose search_path reaches no installation while one exists
//!   elsewhere is refused with `SchemaMismatch` instead of creating a
//!   second, split queue.
//! - **Push wakeups.** One LISTEN connection per store turns the
//!   `cairnq_queued` / `cairnq_done` notifications into early returns of
//!   the watches of [`Store::notifications`](cairnq_core::Store::notifications)
//!   and into its feeds. It
//!   reconnects with backoff; polling stays the source of truth, so a lost
//!   notification (or `listen(false)`) only costs a poll interval. A server
//!   that refuses LISTEN (or the connection for it) for good ends it:
//!   [`Notifications::lost`](cairnq_core::Notifications::lost) resolves
//!   once and the store polls alone.
//! - **The application's own pool.** [`PostgresStore::from_pool`] runs on
//!   the application's deadpool pool (re-exported as [`deadpool_postgres`])
//!   instead of opening one of its own, and leaves it open on close. A
//!   pooled connection cannot LISTEN, so such a store polls unless
//!   [`PostgresOptions::listen_dsn`] names where its one LISTEN connection
//!   goes. The store always runs on a deadpool pool: another pool (bb8, a
//!   hand-rolled one) gets no executor trait. Such an application opens
//!   the store with a small pool of its own
//!   ([`PostgresStore::connect_with`] with `pool_size(2)`) for claims and
//!   heartbeats, and still settles in its own transaction, the part that
//!   must be shared: `complete_in` / `succeed_in` take any tokio-postgres
//!   client or transaction ([`Session`]), whatever pool it came from.
//! - **Application transactions.** [`PostgresStore::complete_in`] and
//!   [`PostgresStore::succeed_in`] settle a task inside the caller's own
//!   tokio-postgres client or transaction, atomically with its writes
//!   (a worker handler does it with `TaskContext::succeed_in`, cairnq-worker's
//!   `postgres` feature).
//! - **Errors** pass through one `classify` function: `\u0000` in JSON is a
//!   `Serialization` error (checked before writing), connection loss,
//!   deadlocks and restarts are transient `Storage` errors.
//!
//! # Testing against a real server
//!
//! The tests need a Postgres server. `CAIRNQ_TEST_PG_DSN` names one (a role
//! that may create schemas); when it is unset, the tests start a throwaway
//! cluster themselves with `scripts/pg-test-server.sh` (initdb + pg_ctl from
//! the machine's Postgres binaries, 127.0.0.1 only, as the `postgres` user
//! when run as root), so `cargo test -p cairnq-postgres` works on a machine
//! with Postgres installed:
//!
//! ```text
//! scripts/pg-test-server.sh start target/pg-test 54329   # prints the DSN
//! CAIRNQ_TEST_PG_DSN=postgres://postgres@127.0.0.1:54329/cairnq_test cargo test -p cairnq-postgres
//! scripts/pg-test-server.sh stop target/pg-test
//! ```
//!
//! Each test works in a fresh schema of its own.
//!
//! # Known limits
//!
//! - TLS needs the `tls` cargo feature (native-tls, so OpenSSL on Linux);
//!   it verifies the server's certificate and name against the platform's
//!   roots plus `PostgresOptions::tls_root_certificates`. Without the
//!   feature, connections are plain TCP.
//! - `complete_in` / `succeed_in` use the application's session as is: its
//!   search_path must reach the cairnq tables.
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "SQLite vs Postgres" (`docs/src/sqlite-vs-postgres.md`) is about
//! this crate.

mod conn;
mod dependencies;
mod error;
mod exec;
#[doc(hidden)]
pub mod floor;
mod flows;
mod inspect;
mod json;
mod listener;
mod migrate;
mod options;
mod pool;
mod pooler;
mod probe;
mod read;
mod row;
mod schedules;
mod script;
mod settle_in;
mod sql;
mod steps;
mod store;
mod tls;
mod tools;
mod write;

/// The pool crate [`PostgresStore::from_pool`] takes, at the version this
/// crate is built with (so an application's pool type matches).
pub use deadpool_postgres;
pub use exec::Session;
pub use options::PostgresOptions;
pub use probe::AppConnections;
pub use settle_in::SucceedIn;
pub use store::PostgresStore;
/// The driver whose clients and transactions
/// [`PostgresStore::complete_in`] takes, at the version this crate is built
/// with.
pub use tokio_postgres;
