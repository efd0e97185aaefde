//! [`SucceedWith`]: a running attempt settles as succeeded together with
//! the application's writes to the same SQLite file, in one transaction on
//! the store's writer thread. Written once over the attempt's
//! [`SettleHook`] (a worker's task context is one), so the worker knows no
//! backend and the store needs no downcast.

use std::future::Future;

use cairnq_core::{Result, SettleHook, Task, not_the_workers_store};
use serde::Serialize;

use crate::{AppWrites, ClosurePanicked, SqliteStore};

/// Settling an attempt together with the application's writes on SQLite;
/// every [`SettleHook`] has it (`use cairnq_sqlite::SucceedWith`).
pub trait SucceedWith: SettleHook {
    /// Settles the attempt as succeeded together with `work`'s writes to
    /// the same file: `work` runs on `store`'s writer thread (`store`: the
    /// worker's store), inside the transaction that settles the task, and
    /// what it returns becomes the task's result
    /// ([`SqliteStore::complete_with`]). Both commit or neither does.
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
    ///   writes were rolled back with it. Reported once by the worker.
    /// - an error from `work`: its writes were rolled back and nothing
    ///   settled; the handler's return settles as usual.
    /// - a panic in `work`: as a panic of the handler itself, the writes
    ///   are rolled back and the attempt fails retryably (`handler_error`
    ///   of type `Panic`, naming the closure); the error answered has a
    ///   [`ClosurePanicked`] source, and the handler's return is not
    ///   written.
    ///
    /// `store` must be the store object the worker claims from (build the
    /// worker with `CairnQ::from_shared(store.clone())` on an
    /// `Arc<SqliteStore>` the handler also holds), else a validation error
    /// and nothing written.
    ///
    /// ```no_run
    /// use cairnq_sqlite::{SqliteStore, SucceedWith};
    /// use cairnq_worker::{TaskContext, TaskError};
    ///
    /// async fn thumbnail(ctx: TaskContext, store: &SqliteStore, path: String) -> Result<(), TaskError> {
    ///     let thumb = format!("{path}.thumb.png"); // the slow part, off the writer thread
    ///     let id = ctx.task_id().to_string();
    ///     ctx.succeed_with(store, move |conn| {
    ///         conn.execute("insert into thumbnails (task_id, path) values (?1, ?2)", (&id, &thumb))?;
    ///         Ok(serde_json::json!({ "thumbnail": thumb }))
    ///     })
    ///     .await?;
    ///     Ok(())
    /// }
    /// ```
    fn succeed_with<'a, R, F>(
        &'a self,
        store: &'a SqliteStore,
        work: F,
    ) -> impl Future<Output = Result<Option<Task>>> + Send + 'a
    where
        R: Serialize,
        F: AppWrites<R>,
    {
        async move {
            if !self.holds_leases_in(store) {
                return Err(not_the_workers_store());
            }
            let write = store.complete_with(self.task_id(), self.worker_id(), work);
            let settled = self.settle_by(Box::pin(write)).await;
            if let Err(error) = &settled
                && let Some(panic) = ClosurePanicked::of(error)
            {
                let message = format!("the handler's succeed_with closure panicked: {}", panic.message());
                self.fail_panicked(message).await;
            }
            settled
        }
    }
}

impl<T: SettleHook + ?Sized> SucceedWith for T {}
