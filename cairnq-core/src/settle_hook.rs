//! [`SettleHook`]: how a backend's own settle (one that writes the task's
//! success inside a transaction the application also writes in) reaches
//! the attempt it settles, without the worker knowing any backend. The
//! worker's task context implements it; `SqliteStore::succeed_with` and
//! `PostgresStore::succeed_in` take it. The worker crate then needs no
//! backend feature, and the seam no downcast.

use std::future::Future;
use std::pin::Pin;

use crate::error::{Error, Result};
use crate::model::Task;
use crate::store::Store;

/// A settle write a backend built: it settles one attempt (ownership
/// checked by the store) and answers the row it left.
pub type SettleWrite<'a> = Pin<Box<dyn Future<Output = Result<Task>> + Send + 'a>>;

/// The error a backend's settle answers, writing nothing, when it is given
/// a store other than the one the attempt's lease lives in.
pub fn not_the_workers_store() -> Error {
    Error::validation("store", "is not the store the worker claims from: pass the worker's own store")
}

/// The answer of [`SettleHook::settle_by`].
pub type Settled<'a> = Pin<Box<dyn Future<Output = Result<Option<Task>>> + Send + 'a>>;

/// A running attempt that a backend-specific settle can settle: the
/// attempt's task and worker, and the attempt's one settle, which the
/// backend's write goes through so the attempt counts as settled (no
/// second write, no lost-lease report later).
///
/// ```
/// use cairnq_core::{Result, SettleHook, SettleWrite, Settled, Task};
///
/// /// A backend's "settle inside your transaction", written once over the hook.
/// async fn succeed_inside(attempt: &dyn SettleHook, write: SettleWrite<'_>) -> Result<Option<Task>> {
///     attempt.settle_by(write).await
/// }
/// ```
pub trait SettleHook: Send + Sync {
    /// The attempt's task.
    fn task_id(&self) -> &str;

    /// The worker holding the attempt's lease.
    fn worker_id(&self) -> &str;

    /// The backend the attempt's lease lives in (`Store::backend`), so a
    /// backend's settle refuses an attempt of another backend's worker.
    fn backend(&self) -> &'static str;

    /// Whether `store` is the store object the attempt's lease lives in:
    /// a backend's settle refuses another (a second store on the same
    /// database would settle behind the worker's back, and on another
    /// database would find no lease).
    fn holds_leases_in(&self, store: &dyn Store) -> bool;

    /// Runs `write` as the attempt's one settle: `Ok(None)` (and `write`
    /// never runs) when the attempt was settled already,
    /// [`Error::LostLease`](crate::Error::LostLease) when its lease is known
    /// lost, else what `write` answered. An error other than a lost lease
    /// wrote nothing: the attempt may still settle another way.
    fn settle_by<'a>(&'a self, write: SettleWrite<'a>) -> Settled<'a>;

    /// Fails the attempt as a panic in the application's code inside the
    /// settle (`message`: the panic's text), retryably, as a panicking
    /// handler would.
    fn fail_panicked<'a>(&'a self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}
