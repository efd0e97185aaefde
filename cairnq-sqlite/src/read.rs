//! The read operations, run on reader threads with the queries built once
//! in `cairnq_core::backend`.

use cairnq_core::backend::TaskRow;
use cairnq_core::store::{
    ChildrenParams, CountQueuedParams, CountTasksParams, GetParams, ListFilter, ProbeParams, PurgeFilter, StatsParams,
    TaskKeyParams,
};
use cairnq_core::{QueueAge, Result, Task, TaskCount, TaskRef};
use cairnq_sql::{LimitMode, ListProbe, Query, Sql};
use rusqlite::Connection;

use crate::row;
use crate::sql::{query, query_int, query_opt};

pub(crate) fn get(conn: &Connection, _now_ms: i64, p: &GetParams) -> Result<Option<Task>> {
    query_opt(conn, &Query::get_task(p), row::one_task())
}

pub(crate) fn get_status(conn: &Connection, _now_ms: i64, p: &GetParams) -> Result<Option<TaskRef>> {
    query_opt(conn, &Query::new(Sql::SelectTaskStatus).select(&p.task), row::decoded::<TaskRef>())
}

/// A page of `filter`, read the way its probe says suits how many rows it
/// matches (`Query::list_planned`).
pub(crate) fn list(conn: &Connection, _now_ms: i64, filter: &ListFilter) -> Result<Vec<TaskRow>> {
    let matching = match ListProbe::new(filter, counted(conn)?, ordered(conn)?) {
        Some(probe) => Some(probe.matching(query_int(conn, &probe.query)?)),
        None => None,
    };
    query(conn, &Query::list_planned(filter, matching), row::task())
}

pub(crate) fn count_tasks(conn: &Connection, _now_ms: i64, p: &CountTasksParams) -> Result<u64> {
    Ok(u64::try_from(query_int(conn, &Query::count_tasks(p))?).unwrap_or_default())
}

/// What a purge of `p` would delete now, by the same statement's rule.
pub(crate) fn purgeable(conn: &Connection, now_ms: i64, p: &PurgeFilter) -> Result<Vec<TaskRow>> {
    query(conn, &Query::purgeable(p).arg("now_ms", now_ms), row::task())
}

pub(crate) fn children(conn: &Connection, _now_ms: i64, p: &ChildrenParams) -> Result<Vec<TaskRow>> {
    query(conn, &Query::children(p), row::task())
}

pub(crate) fn task_key(conn: &Connection, _now_ms: i64, p: &TaskKeyParams) -> Result<Option<String>> {
    query_opt(conn, &Query::task_key(p), row::first_text)
}

pub(crate) fn stats(conn: &Connection, _now_ms: i64, p: &StatsParams) -> Result<Vec<TaskCount>> {
    query(conn, &Query::stats(p, counted(conn)?), row::task_count)
}

pub(crate) fn oldest_due(conn: &Connection, now_ms: i64, p: &StatsParams) -> Result<Vec<QueueAge>> {
    query(conn, &Query::oldest_due(p).arg("now_ms", now_ms), row::queue_age)
}

pub(crate) fn count_queued(conn: &Connection, _now_ms: i64, p: &CountQueuedParams) -> Result<u64> {
    Ok(u64::try_from(query_int(conn, &Query::count_queued(p, counted(conn)?))?).unwrap_or_default())
}

/// Whether the file has the trigger-kept counter table (a file another SDK
/// installed, opened with `Install::Existing`, may not). Asked on every
/// call: a lookup in the in-memory schema, and right as soon as any process
/// migrates the file.
fn counted(conn: &Connection) -> Result<bool> {
    Ok(query_int(conn, &Query::new(Sql::TableExists).arg("table", Query::COUNTS_TABLE))? != 0)
}

/// Whether claims on the file enforce limits: where the flow-control
/// extensions are, ext_0006 and ext_0007 (asked as [`counted`] is).
pub(crate) fn limit_mode(conn: &Connection) -> Result<LimitMode> {
    let present = query_int(conn, &Query::new(Sql::IndexExists).arg("index", Query::LIMITS_INDEX))? != 0;
    Ok(if present { LimitMode::On } else { LimitMode::Off })
}

/// Whether the file has the list-order index of ext_0003 (asked as
/// [`counted`] is).
fn ordered(conn: &Connection) -> Result<bool> {
    Ok(query_int(conn, &Query::new(Sql::IndexExists).arg("index", Query::ORDER_INDEX))? != 0)
}

pub(crate) fn claimable(conn: &Connection, now_ms: i64, params: &ProbeParams) -> Result<bool> {
    Ok(query_int(conn, &Query::probe(params).arg("now_ms", now_ms))? != 0)
}
