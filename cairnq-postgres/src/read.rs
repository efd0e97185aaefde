//! Read-only operations: get, get_status, list, stats, the bounded queued
//! count, and the claim probe, with the queries built once in
//! `cairnq_sql`.

use cairnq_core::backend::TaskRow;
use cairnq_core::store::{
    ChildrenParams, CountQueuedParams, CountTasksParams, GetParams, ListFilter, ProbeParams, PurgeFilter, StatsParams,
    TaskKeyParams,
};
use cairnq_core::{QueueAge, Result, Task, TaskCount, TaskRef};
use cairnq_sql::{ListProbe, Query, Sql};

use crate::exec::{Exec, answer, one_row, opt_row, rows};
use crate::row::{self, col};

/// The whole row, or `None`.
pub(crate) async fn get(exec: &impl Exec, params: &GetParams) -> Result<Option<Task>> {
    opt_row(exec, &Query::get_task(params)).await?.as_ref().map(row::decode::<Task>).transpose()
}

/// Id and status, or `None`.
pub(crate) async fn get_status(exec: &impl Exec, params: &GetParams) -> Result<Option<TaskRef>> {
    let query = Query::new(Sql::SelectTaskStatus).select(&params.task);
    opt_row(exec, &query).await?.as_ref().map(row::decode::<TaskRef>).transpose()
}

/// Rows matching the filters given, newest first, each decoded on its own,
/// read the way the filter's probe says suits how many rows it matches
/// (`ListProbe`, `Query::list_planned`; `counted` and `ordered`: the
/// extension table and index the probe and the walk need).
pub(crate) async fn list(exec: &impl Exec, filter: &ListFilter, counted: bool, ordered: bool) -> Result<Vec<TaskRow>> {
    let matching = match ListProbe::new(filter, counted, ordered) {
        Some(probe) => Some(probe.matching(col::<i64>(&one_row(exec, &probe.query).await?, "count")?)),
        None => None,
    };
    row::decode_all(&rows(exec, &Query::list_planned(filter, matching)).await?)
}

/// The bounded count of what a filter matches.
pub(crate) async fn count_tasks(exec: &impl Exec, params: &CountTasksParams) -> Result<u64> {
    let count: i64 = col(&one_row(exec, &Query::count_tasks(params)).await?, "count")?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// What a purge of `filter` would delete now, by the same statement's rule.
pub(crate) async fn purgeable(exec: &impl Exec, filter: &PurgeFilter) -> Result<Vec<TaskRow>> {
    row::decode_all(&rows(exec, &Query::purgeable(filter)).await?)
}

/// The tasks one task submitted, newest first.
pub(crate) async fn children(exec: &impl Exec, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
    row::decode_all(&rows(exec, &Query::children(params)).await?)
}

/// The business key pointing at a task, if any.
pub(crate) async fn task_key(exec: &impl Exec, params: &TaskKeyParams) -> Result<Option<String>> {
    opt_row(exec, &Query::task_key(params)).await?.as_ref().map(|r| col::<String>(r, "key")).transpose()
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
