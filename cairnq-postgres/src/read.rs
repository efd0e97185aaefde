//! Read-only operations: get, get_status, list, stats, the bounded queued
//! count, and the claim probe, with the queries built once in
//! `cairnq_core::backend`.

use cairnq_core::backend::{Query, Sql, TaskRow};
use cairnq_core::store::{ListFilter, ProbeParams};
use cairnq_core::{Result, Task, TaskCount, TaskRef, TaskSelector};

use crate::exec::{Exec, answer, one_row, opt_row, rows};
use crate::row::{self, col};

/// The whole row, or `None`.
pub(crate) async fn get(exec: &impl Exec, task: &TaskSelector) -> Result<Option<Task>> {
    opt_row(exec, &Query::new(Sql::SelectTask).select(task)).await?.as_ref().map(row::task).transpose()
}

/// Id and status, or `None`.
pub(crate) async fn get_status(exec: &impl Exec, task: &TaskSelector) -> Result<Option<TaskRef>> {
    opt_row(exec, &Query::new(Sql::SelectTaskStatus).select(task)).await?.as_ref().map(row::task_ref).transpose()
}

/// Rows matching the filters given, newest first, each decoded on its own.
pub(crate) async fn list(exec: &impl Exec, filter: &ListFilter) -> Result<Vec<TaskRow>> {
    Ok(rows(exec, &Query::list(filter)).await?.iter().map(row::task_row).collect())
}

/// Row counts by queue and status.
pub(crate) async fn stats(exec: &impl Exec, queue: Option<&str>) -> Result<Vec<TaskCount>> {
    let query = Query::new(Sql::CountTasksByQueueStatus);
    let query = match queue {
        Some(queue) => query.flag("queue").arg("queue", queue),
        None => query,
    };
    rows(exec, &query).await?.iter().map(row::task_count).collect()
}

/// Queued rows on `queue`, counting at most `at_most`.
pub(crate) async fn count_queued(exec: &impl Exec, queue: &str, at_most: u64) -> Result<u64> {
    let at_most = i64::try_from(at_most).unwrap_or(i64::MAX);
    let query = Query::new(Sql::CountQueued).arg("queue", queue).arg("at_most", at_most);
    let count: i64 = col(&one_row(exec, &query).await?, "count")?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The claim gate: anything due here, or any expired lease?
pub(crate) async fn claimable(exec: &impl Exec, params: &ProbeParams) -> Result<bool> {
    answer(exec, &Query::new(Sql::ProbeClaimable).scope(&params.queues, params.names.as_deref())).await
}
