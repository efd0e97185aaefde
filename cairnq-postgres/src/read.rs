//! Read-only operations: get, get_status, list, stats, the bounded queued
//! count, and the claim probe, with the queries built once in
//! `cairnq_core::backend`.

use cairnq_core::backend::{Query, Sql, TaskRow};
use cairnq_core::store::{CountQueuedParams, GetParams, ListFilter, ProbeParams, StatsParams};
use cairnq_core::{QueueAge, Result, Task, TaskCount, TaskRef};

use crate::exec::{Exec, answer, one_row, opt_row, rows};
use crate::row::{self, col};

/// The whole row, or `None`.
pub(crate) async fn get(exec: &impl Exec, params: &GetParams) -> Result<Option<Task>> {
    opt_row(exec, &Query::get_task(params)).await?.as_ref().map(row::task).transpose()
}

/// Id and status, or `None`.
pub(crate) async fn get_status(exec: &impl Exec, params: &GetParams) -> Result<Option<TaskRef>> {
    let query = Query::new(Sql::SelectTaskStatus).select(&params.task);
    opt_row(exec, &query).await?.as_ref().map(row::task_ref).transpose()
}

/// Rows matching the filters given, newest first, each decoded on its own.
pub(crate) async fn list(exec: &impl Exec, filter: &ListFilter) -> Result<Vec<TaskRow>> {
    Ok(rows(exec, &Query::list(filter)).await?.iter().map(row::task_row).collect())
}

/// Row counts by queue and status (from the counter table with `counted`).
pub(crate) async fn stats(exec: &impl Exec, params: &StatsParams, counted: bool) -> Result<Vec<TaskCount>> {
    rows(exec, &Query::stats(params, counted)).await?.iter().map(row::task_count).collect()
}

/// Per queue, the age of its oldest due queued task.
pub(crate) async fn oldest_due(exec: &impl Exec, params: &StatsParams) -> Result<Vec<QueueAge>> {
    rows(exec, &Query::oldest_due(params)).await?.iter().map(row::queue_age).collect()
}

/// Queued rows on a queue, counting at most `at_most`.
pub(crate) async fn count_queued(exec: &impl Exec, params: &CountQueuedParams, counted: bool) -> Result<u64> {
    let count: i64 = col(&one_row(exec, &Query::count_queued(params, counted)).await?, "count")?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The claim gate: anything due here, or any expired lease?
pub(crate) async fn claimable(exec: &impl Exec, params: &ProbeParams) -> Result<bool> {
    answer(exec, &Query::probe(params)).await
}
