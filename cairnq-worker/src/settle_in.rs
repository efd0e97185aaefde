//! Settling inside the application's own transaction, so a handler's rows
//! and its task's success commit together or not at all: on Postgres in
//! the application's transaction ([`TaskContext::succeed_in`]), on SQLite
//! in the writer's transaction with the handler's closure
//! ([`TaskContext::succeed_with`]). Both go through the worker's one
//! settle claim (`Shared::settle_by`), so the worker knows the task is
//! settled: no second write, no lost-lease report for it later.

#[cfg(feature = "postgres")]
use cairnq_core::Json;
#[cfg(feature = "postgres")]
use cairnq_core::store::SettleParams;
use cairnq_core::{Error, Result, Store, Task};
use serde::Serialize;

use crate::context::TaskContext;
#[cfg(feature = "sqlite")]
use crate::settle::Settlement;

impl TaskContext {
    /// Settles the task as succeeded inside `session`, the application's
    /// own transaction (a [`Session`](cairnq_postgres::Session): deadpool's
    /// or tokio-postgres'), so the handler's writes
    /// in it and the task's success commit together when the application
    /// commits. Call it last, just before the commit: from here on the
    /// transaction holds the task's row, and the worker stops renewing
    /// the lease (a renewal would wait for that row). Commit promptly: a
    /// renewal of this worker's leases already on its way when the settle
    /// was written waits for the commit too.
    ///
    /// - `Ok(Some(task))`: the settle is written in the transaction;
    ///   commit it. The worker counts the task settled: the handler's
    ///   return value is ignored and nothing is written again. If the
    ///   commit fails (or the application rolls back), neither its rows nor
    ///   the settle persist; the task stays running under a lease nobody
    ///   renews and is claimed again when it expires, as after a crash
    ///   (at-least-once).
    /// - `Err(LostLease)`: the lease is gone (the task was reclaimed after
    ///   its lease expired, or canceled and settled); another attempt may
    ///   run it. Nothing was written for the task: roll back (returning the
    ///   error with `?` drops the transaction). Reported once, as a
    ///   [`WorkerIssue::LostLeases`](crate::WorkerIssue::LostLeases).
    /// - `Ok(None)`: settled before (by an earlier settle); nothing written.
    /// - any other error: nothing written for the task (the transaction is
    ///   likely aborted); roll back, and the handler's return settles the
    ///   task as usual.
    ///
    /// A pending cancel wins, as with [`succeed`](Self::succeed): the row
    /// ends canceled. The session must be on the worker's database and
    /// reach the cairnq tables through its search_path; the worker's store
    /// must be a [`PostgresStore`](cairnq_postgres::PostgresStore) (else
    /// [`Error::UnsupportedBackend`]). Postgres only (`postgres` feature);
    /// on SQLite see [`succeed_with`](Self::succeed_with).
    ///
    /// ```no_run
    /// use cairnq_postgres::deadpool_postgres::Pool;
    /// use cairnq_worker::{TaskContext, TaskError};
    ///
    /// /// The handler's work, on the application's own pool.
    /// async fn bill(ctx: &TaskContext, app: &Pool, cents: i64) -> Result<(), TaskError> {
    ///     let mut conn = app.get().await?;
    ///     let tx = conn.transaction().await?;
    ///     tx.execute("insert into invoices (task_id, cents) values ($1, $2)", &[&ctx.task_id(), &cents]).await?;
    ///     ctx.succeed_in(&tx, &serde_json::json!({"billed": cents})).await?; // last, then commit
    ///     tx.commit().await?;
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "postgres")]
    pub async fn succeed_in<S, R>(&self, session: &S, result: &R) -> Result<Option<Task>>
    where
        S: cairnq_postgres::Session + ?Sized,
        R: Serialize + ?Sized,
    {
        let store = self.backend_store::<cairnq_postgres::PostgresStore>("succeed_in")?;
        let params = SettleParams::new(self.task_id(), self.worker_id()).result(Json::encode(result)?);
        self.core().settle_by(self.task(), self.state(), store.complete_in(session, &params)).await
    }

    /// Settles the task as succeeded together with `work`'s writes to the
    /// same SQLite file (`work`: a closure
    /// `FnOnce(&rusqlite::Connection) -> rusqlite::Result<R>`, see
    /// [`AppWrites`](cairnq_sqlite::AppWrites)): `work` runs on the store's writer thread, inside
    /// the transaction that settles the task, and what it returns becomes
    /// the task's result (`SqliteStore::complete_with`). Both commit or
    /// neither does. SQLite only (`sqlite` feature); the other SDKs have no
    /// counterpart.
    ///
    /// `work` runs once, synchronously, on the thread every write of the
    /// database waits for: keep it to a few statements (compute first,
    /// write here), and never `BEGIN`, `COMMIT` or open a savepoint on the
    /// connection. It does not run when the task was settled already
    /// (`Ok(None)`) or its lease is known lost.
    ///
    /// - `Ok(Some(task))`: committed, rows and result. The handler's return
    ///   value is ignored and nothing is written again.
    /// - `Err(LostLease)`: the lease was gone when the settle ran; `work`'s
    ///   writes were rolled back with it (a savepoint of their own, so the
    ///   other writes sharing the commit are untouched). Reported once.
    /// - an error from `work`: its writes were rolled back and nothing
    ///   settled; the handler's return settles as usual.
    /// - a panic in `work`: as a panic of the handler itself, it is not
    ///   reported by the panic hook, the writes are rolled back, and the
    ///   attempt fails retryably (`handler_error` of type `Panic`, naming
    ///   the closure); the error answered says the closure panicked
    ///   (its source is a [`ClosurePanicked`](cairnq_sqlite::ClosurePanicked)),
    ///   and the handler's return is not written.
    ///
    /// The worker's store must be a [`SqliteStore`](cairnq_sqlite::SqliteStore)
    /// (else [`Error::UnsupportedBackend`]).
    ///
    /// ```no_run
    /// use cairnq_worker::{TaskContext, TaskError};
    ///
    /// async fn thumbnail(ctx: TaskContext, path: String) -> Result<(), TaskError> {
    ///     let thumb = format!("{path}.thumb.png"); // the slow part, off the writer thread
    ///     let id = ctx.task_id().to_string();
    ///     ctx.succeed_with(move |conn| {
    ///         conn.execute("insert into thumbnails (task_id, path) values (?1, ?2)", (&id, &thumb))?;
    ///         Ok(serde_json::json!({ "thumbnail": thumb }))
    ///     })
    ///     .await?;
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "sqlite")]
    pub async fn succeed_with<R, F>(&self, work: F) -> Result<Option<Task>>
    where
        R: Serialize,
        F: cairnq_sqlite::AppWrites<R>,
    {
        let store = self.backend_store::<cairnq_sqlite::SqliteStore>("succeed_with")?;
        let write = store.complete_with(self.task_id(), self.worker_id(), work);
        let settled = self.core().settle_by(self.task(), self.state(), write).await;
        if let Err(error) = &settled
            && let Some(panic) = cairnq_sqlite::ClosurePanicked::of(error)
        {
            let message = format!("the handler's succeed_with closure panicked: {}", panic.message());
            let failure = Settlement::Fail(crate::call::panic_error(message));
            self.core().settle_outcome(self.task(), self.state(), failure).await;
        }
        settled
    }

    /// The worker's store as the backend `S`, for an operation only `S` has.
    fn backend_store<S: Store>(&self, operation: &'static str) -> Result<&S> {
        let store = self.client().store();
        store
            .as_any()
            .and_then(|any| any.downcast_ref::<S>())
            .ok_or(Error::UnsupportedBackend { operation, backend: store.backend() })
    }
}
