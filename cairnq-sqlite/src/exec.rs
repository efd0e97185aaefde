//! [`Executor`] over a SQLite connection, so the flows written once in
//! `cairnq_core::backend::flows` run here: synchronously (every future is
//! ready when first polled), on the thread that owns the connection.
//!
//! On the writer it also records what each write changed for this store's
//! sleepers (a queue gained due work, a task finished), published after
//! the commit. The one write whose statement is SQLite's own shape
//! ([`complete_batch`]) is here too.

use std::cell::RefCell;

use cairnq_core::backend::{Arg, Executor, Query, Sql, TaskRow, in_asked_order};
use cairnq_core::store::{CompleteBatchParams, NewTask};
use cairnq_core::{Error, HeldLease, Result, Task, TaskRef};
use rusqlite::{Connection, Row};

use crate::group_commit::WriteCtx;
use crate::local_wakeups::Changes;
use crate::row;
use crate::sql::query;

/// Statements that only read: their rows change nothing a sleeper waits for.
fn reads_only(sql: Sql) -> bool {
    matches!(sql, Sql::SelectTask | Sql::SelectTaskStatus | Sql::SelectKeyTask | Sql::ListTasks | Sql::ListTasksInOrder)
}

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

    /// Runs a flow of `cairnq_core::backend::flows` to its end. Every
    /// statement here completes synchronously, so polling never waits.
    pub(crate) fn run<T>(&self, flow: impl std::future::Future<Output = T>) -> T {
        futures::executor::block_on(flow)
    }

    fn rows<T>(&self, q: Query, map: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Vec<T>> {
        query(self.conn, &q.arg("now_ms", self.now_ms), map)
    }

    fn note(&self, change: impl FnOnce(&mut Changes)) {
        if let Some(changes) = &self.changes {
            change(&mut changes.borrow_mut());
        }
    }

    fn text_arg<'q>(q: &'q Query, name: &str) -> Option<&'q str> {
        match q.get(name) {
            Some(Arg::Text(text)) => Some(text),
            _ => None,
        }
    }
}

impl Executor for SqliteExec<'_> {
    async fn tasks(&self, q: Query) -> Result<Vec<TaskRow>> {
        let sql = q.sql;
        let rows = self.rows(q, row::task())?;
        if !reads_only(sql) {
            rows.iter().flatten().for_each(|task| self.note(|c| c.saw(task)));
        }
        Ok(rows)
    }

    async fn refs(&self, q: Query) -> Result<Vec<TaskRef>> {
        self.rows(q, row::task_ref)
    }

    async fn leases(&self, q: Query) -> Result<Vec<HeldLease>> {
        self.rows(q, row::held_lease)
    }

    async fn recovered(&self, q: Query) -> Result<Vec<(String, String)>> {
        let sql = q.sql;
        let moved = self.rows(q, row::id_and_queue)?;
        for (id, queue) in &moved {
            match sql {
                Sql::RecoverRequeuedLeases => self.note(|c| c.queued_on(queue)),
                _ => self.note(|c| c.finished(id.clone(), Some(queue.clone()))),
            }
        }
        Ok(moved)
    }

    async fn ids(&self, q: Query) -> Result<Vec<String>> {
        let sql = q.sql;
        match sql {
            Sql::RecoverCanceledLeases | Sql::RecoverRequeuedLeases | Sql::RecoverFailedLeases => {
                Ok(self.recovered(q).await?.into_iter().map(|(id, _)| id).collect())
            }
            Sql::FailUndecodableTask => {
                let id = Self::text_arg(&q, "id").map(str::to_string);
                self.rows(q, |_| Ok(()))?;
                if let Some(id) = id {
                    self.note(|c| c.finished(id, None));
                }
                Ok(Vec::new())
            }
            _ => {
                let queues = match (sql, q.get("queues")) {
                    (Sql::ScheduleUnscheduledTasks, Some(Arg::Texts(queues))) => queues.clone(),
                    _ => Vec::new(),
                };
                let ids = self.rows(q, row::first_text)?;
                if !ids.is_empty() {
                    // Which queue each made-due row is on is not returned;
                    // waking every repaired queue's sleepers is the cheap superset.
                    queues.iter().for_each(|queue| self.note(|c| c.queued_on(queue)));
                }
                Ok(ids)
            }
        }
    }

    async fn lock_key(&self, _key: &str) -> Result<()> {
        // The write transaction (BEGIN IMMEDIATE) already serializes writers.
        Ok(())
    }

    async fn insert(&self, task: &NewTask) -> Result<Task> {
        self.rows(Query::insert(task), |_| Ok(()))?;
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
        self.rows(Query::new(Sql::InsertTasks).arg("tasks", serde_json::Value::Array(rows).to_string()), |_| Ok(()))?;
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
    let settled = query(ctx.conn, &q, row::task_ref)?;
    for task in &settled {
        ctx.changes.finished(task.id.clone(), None);
    }
    Ok(in_asked_order(params.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
}
