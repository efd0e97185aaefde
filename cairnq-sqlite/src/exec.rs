//! [`Executor`] over a SQLite connection, so the flows written once in
//! `cairnq_sql::flows` run here: synchronously (every future is
//! ready when first polled), on the thread that owns the connection.
//!
//! On the writer it also records what the flows say each write changed for
//! this store's sleepers (a queue gained due work, a task finished),
//! published after the commit. The one write whose statement is SQLite's own shape
//! ([`complete_batch`]) is here too.

use std::cell::RefCell;

use cairnq_core::backend::{Changes, in_asked_order};
use cairnq_core::store::{CompleteBatchParams, NewTask};
use cairnq_core::{Error, Result, Task, TaskRef};
use cairnq_sql::{Executor, FromRow, Query, RangeReads, Sql};
use rusqlite::{Connection, Row};

use crate::group_commit::WriteCtx;
use crate::row;
use crate::sql::query;

/// A connection, "now" for this operation, and (on the writer) where its
/// changes are noted.
pub(crate) struct SqliteExec<'a> {
    conn: &'a Connection,
    now_ms: i64,
    changes: Option<RefCell<&'a mut Changes>>,
}

impl<'a> SqliteExec<'a> {
    /// The writer's view of one job.
    pub(crate) fn writing(ctx: &'a mut WriteCtx<'_>) -> Self {
        Self { conn: ctx.conn, now_ms: ctx.now_ms, changes: Some(RefCell::new(&mut *ctx.changes)) }
    }

    /// A reader's view: nothing it runs is noted for sleepers.
    pub(crate) fn reading(conn: &'a Connection, now_ms: i64) -> Self {
        Self { conn, now_ms, changes: None }
    }

    /// Runs a flow of `cairnq_sql::flows` to its end. Every
    /// statement here completes synchronously, so polling never waits.
    pub(crate) fn run<T>(&self, flow: impl std::future::Future<Output = T>) -> T {
        futures::executor::block_on(flow)
    }

    /// Runs `q` at this operation's "now", mapping each row.
    fn run_query<T>(&self, q: Query, map: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Vec<T>> {
        query(self.conn, &q.arg("now_ms", self.now_ms), map)
    }
}

impl Executor for SqliteExec<'_> {
    async fn rows<T: FromRow>(&self, q: Query) -> Result<Vec<T>> {
        self.run_query(q, row::decoded::<T>())
    }

    fn note(&self, change: impl FnOnce(&mut Changes)) {
        if let Some(changes) = &self.changes {
            change(&mut changes.borrow_mut());
        }
    }

    async fn lock_key(&self, _key: &str) -> Result<()> {
        // The write transaction (BEGIN IMMEDIATE) already serializes writers.
        Ok(())
    }

    fn range_reads(&self) -> RangeReads {
        RangeReads::Apart
    }

    async fn insert(&self, task: &NewTask) -> Result<Task> {
        self.run_query(Query::insert(task), |_| Ok(()))?;
        self.note(|c| c.queued_on(&task.queue));
        // No RETURNING: SQLite runs it through a statement journal that
        // costs about half an insert; the row written is known.
        Ok(task.inserted_row(self.now_ms))
    }

    async fn insert_unkeyed(&self, tasks: &[NewTask]) -> Result<Vec<Task>> {
        let rows: Vec<serde_json::Value> = tasks
            .iter()
            .map(|t| {
                serde_json::json!([
                    t.id,
                    t.name,
                    t.queue,
                    t.payload.as_str(),
                    t.metadata.as_str(),
                    t.max_attempts,
                    t.priority,
                    t.delay_ms,
                    t.parent_id,
                    t.root_id,
                    t.correlation_id
                ])
            })
            .collect();
        self.run_query(Query::new(Sql::InsertTasks).arg("tasks", serde_json::Value::Array(rows).to_string()), |_| {
            Ok(())
        })?;
        for task in tasks {
            self.note(|c| c.queued_on(&task.queue));
        }
        Ok(tasks.iter().map(|t| t.inserted_row(self.now_ms)).collect())
    }
}

/// The tasks settled, in the order asked; each is done for its waiters.
/// `:settles` is one JSON array of `[id, result]` pairs (results embedded
/// verbatim), the shape SQLite's `json_each` reads.
pub(crate) fn complete_batch(ctx: &mut WriteCtx<'_>, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
    let settles = serde_json::to_string(&params.completions).map_err(|e| Error::Serialization(e.to_string()))?;
    let q = Query::new(Sql::CompleteTasks)
        .arg("settles", settles)
        .arg("worker_id", &params.worker_id)
        .arg("now_ms", ctx.now_ms);
    let settled = query(ctx.conn, &q, row::decoded::<TaskRef>())?;
    for task in &settled {
        ctx.changes.finished(task.id.clone(), None);
    }
    Ok(in_asked_order(params.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
}
