//! The read operations, run on reader threads with the queries built once
//! in `cairnq_core::backend`.

use cairnq_core::backend::{Query, Sql, TaskRow};
use cairnq_core::store::{ListFilter, ProbeParams, TaskSelector};
use cairnq_core::{Result, Task, TaskCount, TaskRef};
use rusqlite::Connection;

use crate::row;
use crate::sql::{query, query_int, query_opt};

pub(crate) fn get(conn: &Connection, task: &TaskSelector) -> Result<Option<Task>> {
    query_opt(conn, &Query::new(Sql::SelectTask).select(task), row::one_task())
}

pub(crate) fn get_status(conn: &Connection, task: &TaskSelector) -> Result<Option<TaskRef>> {
    query_opt(conn, &Query::new(Sql::SelectTaskStatus).select(task), row::task_ref)
}

pub(crate) fn list(conn: &Connection, filter: &ListFilter) -> Result<Vec<TaskRow>> {
    query(conn, &Query::list(filter), row::task())
}

pub(crate) fn stats(conn: &Connection, queue: Option<&str>) -> Result<Vec<TaskCount>> {
    let q = Query::new(Sql::CountTasksByQueueStatus);
    let q = match queue {
        Some(queue) => q.flag("queue").arg("queue", queue),
        None => q,
    };
    query(conn, &q, row::task_count)
}

pub(crate) fn count_queued(conn: &Connection, queue: &str, at_most: u64) -> Result<u64> {
    let q = Query::new(Sql::CountQueued).arg("queue", queue).arg("at_most", i64::try_from(at_most).unwrap_or(i64::MAX));
    Ok(u64::try_from(query_int(conn, &q)?).unwrap_or_default())
}

pub(crate) fn claimable(conn: &Connection, now_ms: i64, params: &ProbeParams) -> Result<bool> {
    let q = Query::new(Sql::ProbeClaimable).arg("now_ms", now_ms).scope(&params.queues, params.names.as_deref());
    Ok(query_int(conn, &q)? != 0)
}
