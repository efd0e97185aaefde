//! [`SucceedIn`]: a running attempt settles as succeeded inside the
//! application's own Postgres transaction, so the handler's rows and the
//! task's success commit together or not at all. Written once over the
//! attempt's [`SettleHook`] (a worker's task context is one), so the worker
//! knows no backend and the store needs no downcast.

use std::future::Future;

use cairnq_core::store::SettleParams;
use cairnq_core::{Error, Json, Result, SettleHook, Task};
use serde::Serialize;

use crate::Session;
use crate::exec::AppSession;
use crate::flows::PgExec;
use crate::write::check_jsonb;

/// Settling an attempt inside the application's transaction on Postgres;
/// every [`SettleHook`] has it (`use cairnq_postgres::SucceedIn`).
pub trait SucceedIn: SettleHook {
    /// Settles the attempt as succeeded inside `session`, the
    /// application's own transaction (a [`Session`]: deadpool's or
    /// tokio-postgres') on the worker's database (the session reaches the
    /// cairnq tables through its search_path), so
    /// the handler's writes in it and the task's success commit together
    /// when the application commits. Call it last, just before the commit:
    /// from here on the transaction holds the task's row, and the worker
    /// stops renewing the lease (a renewal would wait for that row).
    /// Commit promptly.
    ///
    /// - `Ok(Some(task))`: the settle is written in the transaction; commit
    ///   it. The worker counts the task settled: the handler's return value
    ///   is ignored and nothing is written again. If the commit fails (or
    ///   the application rolls back), neither its rows nor the settle
    ///   persist; the task stays running under a lease nobody renews and is
    ///   claimed again when it expires, as after a crash (at-least-once).
    /// - `Err(LostLease)`: the lease is gone (reclaimed after it expired,
    ///   or canceled and settled); another attempt may run it. Nothing was
    ///   written for the task: roll back. Reported once by the worker.
    /// - `Ok(None)`: settled before (by an earlier settle); nothing written.
    /// - any other error: nothing written for the task (the transaction is
    ///   likely aborted); roll back, and the handler's return settles the
    ///   task as usual.
    ///
    /// A pending cancel wins: the row ends canceled. A worker on another
    /// backend gets [`Error::UnsupportedBackend`] and nothing is written.
    ///
    /// ```no_run
    /// use cairnq_postgres::deadpool_postgres::Pool;
    /// use cairnq_postgres::SucceedIn;
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
    fn succeed_in<'a, S, R>(
        &'a self,
        session: &'a S,
        result: &'a R,
    ) -> impl Future<Output = Result<Option<Task>>> + Send + 'a
    where
        S: Session + ?Sized,
        R: Serialize + Sync + ?Sized,
    {
        async move {
            if self.backend() != "postgres" {
                return Err(Error::UnsupportedBackend { operation: "succeed_in", backend: self.backend() });
            }
            let params = SettleParams::new(self.task_id(), self.worker_id()).result(Json::encode(result)?);
            self.settle_by(Box::pin(complete_in_session(session, &params))).await
        }
    }
}

impl<T: SettleHook + ?Sized> SucceedIn for T {}

/// `complete` in the application's own session: what
/// [`PostgresStore::complete_in`](crate::PostgresStore::complete_in) and
/// [`SucceedIn`] run.
pub(crate) async fn complete_in_session<S: Session + ?Sized>(session: &S, params: &SettleParams) -> Result<Task> {
    check_jsonb("result", &params.result)?;
    cairnq_sql::flows::complete(&PgExec(&AppSession(session)), params).await
}
