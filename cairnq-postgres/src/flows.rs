//! The flows of `cairnq_sql::flows` on Postgres: [`PgExec`]
//! implements the core's `Executor` over any [`Exec`] (a pooled connection,
//! a pooled transaction, or the application's own session), so the same
//! claim, keyed submit and lease-checked writes run in each.

use cairnq_core::store::NewTask;
use cairnq_core::{Result, Task};
use cairnq_sql::{Executor, FromRow, LimitLocks, Query};

use crate::exec::{Exec, rows, run_sql};
use crate::row;
use crate::write::{insert, insert_unkeyed};

/// The per-key lock of a keyed submit: held to the end of the transaction,
/// so concurrent submits of one key queue up behind each other (PROTOCOL.md).
const LOCK_KEY: &str = "select pg_advisory_xact_lock(hashtextextended($1, 0))";

/// The per-key lock of a limit-aware claim, only tried: the keys this
/// transaction now holds until it ends; a key another claimer holds is
/// skipped this round, so claimers never wait on each other. The prefix
/// keeps these locks apart from keyed submits' on the same text.
const TRY_LOCK_LIMIT_KEYS: &str = "select k from unnest($1::text[]) as k \
    where pg_try_advisory_xact_lock(hashtextextended('cairnq_ext_limit:' || k, 0))";

/// Generic plans for the rest of the transaction (`Executor::plan_once`).
const PLAN_ONCE: &str = "select set_config('plan_cache_mode', 'force_generic_plan', true)";

/// The shared flows of `cairnq_sql::flows` over any [`Exec`]: a
/// pooled connection, a pooled transaction, or the application's session.
pub(crate) struct PgExec<'a, E>(pub(crate) &'a E);

impl<E: Exec> Executor for PgExec<'_, E> {
    async fn rows<T: FromRow>(&self, query: Query) -> Result<Vec<T>> {
        row::decode_all(&rows(self.0, &query).await?)
    }

    async fn lock_key(&self, key: &str) -> Result<()> {
        run_sql(self.0, "lock the task's key", LOCK_KEY, &[&key]).await.map(drop)
    }

    async fn lock_limit_keys(&self, keys: &[String]) -> Result<LimitLocks> {
        let rows = run_sql(self.0, "lock limit keys", TRY_LOCK_LIMIT_KEYS, &[&keys]).await?;
        Ok(LimitLocks::Granted(rows.iter().map(|r| r.get::<_, String>(0)).collect()))
    }

    async fn plan_once(&self) -> Result<()> {
        // Local to the transaction: only the limit-aware claim asks, and its
        // statements lock nothing they wait for (rows are skipped when
        // locked, keys only tried), so no plan can change an order of waits.
        run_sql(self.0, "plan once", PLAN_ONCE, &[]).await.map(drop)
    }

    async fn insert(&self, task: &NewTask) -> Result<Task> {
        insert(self.0, task).await
    }

    async fn insert_unkeyed(&self, tasks: &[NewTask]) -> Result<Vec<Task>> {
        insert_unkeyed(self.0, tasks).await
    }
}
