//! The schedule operations of the seam written once over an
//! [`Executor`]: each statement returns schedule rows as typed rows
//! ([`ScheduleRow`]'s [`FromRow`](crate::FromRow)), so a backend needs no
//! row mapping of its own. A fire runs in the caller's transaction.

use cairnq_protocol::Sql;

use super::flows::{Executor, submit};
use super::query::{Arg, Query};
use cairnq_core::Task;
use cairnq_core::store::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow,
};
use cairnq_core::{Error, Result};

/// The store's now (the database clock on Postgres).
pub(crate) async fn clock(exec: &impl Executor) -> Result<i64> {
    let now = exec.rows::<i64>(Query::new(Sql::SelectClock)).await?.into_iter().next();
    now.ok_or_else(|| Error::corrupt_row("the store's clock read back no row"))
}

/// Schedules as asked, with the now they were read at.
pub async fn schedules(exec: &impl Executor, query: &ScheduleQuery) -> Result<ScheduleRead> {
    let now_ms = clock(exec).await?;
    let mut q = Query::new(Sql::SelectSchedules);
    if let Some(name) = &query.name {
        q = q.flag("by_name").arg("name", name);
    }
    q = if query.due { q.flag("due").arg("now_ms", now_ms) } else { q.flag("listing") };
    Ok(ScheduleRead::new(now_ms, exec.rows(q).await?))
}

/// Creates or updates a schedule; the row as stored.
pub async fn save_schedule(exec: &impl Executor, params: &SaveScheduleParams) -> Result<ScheduleRow> {
    let r = &params.row;
    let (catch_up, catch_up_window_ms, catch_up_max) = r.catch_up.stored();
    let q = Query::new(Sql::UpsertSchedule)
        .arg("name", &r.name)
        .arg("task_name", &r.task_name)
        .arg("queue", &r.queue)
        .arg("payload", r.payload.as_str())
        .arg("priority", r.priority)
        .arg("max_attempts", r.max_attempts)
        .arg("metadata", r.metadata.as_str())
        .arg("spec", &r.spec)
        .arg("tz", &r.tz)
        .arg("next_fire_ms", r.next_fire_ms)
        .arg("catch_up", catch_up)
        .arg("catch_up_window_ms", catch_up_window_ms)
        .arg("catch_up_max", catch_up_max)
        .arg("overlap", r.overlap.as_str())
        .arg("jitter_ms", r.jitter_ms)
        .arg("owner", r.owner.as_str());
    exec.rows::<ScheduleRow>(q).await?.pop().ok_or_else(|| Error::corrupt_row("a schedule upsert returned no row"))
}

/// Pauses or resumes; the row after.
pub async fn pause_schedule(exec: &impl Executor, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
    let q = Query::new(Sql::PauseSchedule)
        .arg("name", &params.name)
        .arg("paused", params.paused)
        .arg("next_fire_ms", params.next_fire_ms.map_or(Arg::Null, Arg::Int));
    Ok(exec.rows::<ScheduleRow>(q).await?.pop())
}

/// Deletes a schedule; whether it existed.
pub async fn delete_schedule(exec: &impl Executor, params: &DeleteScheduleParams) -> Result<bool> {
    Ok(!exec.rows::<String>(Query::new(Sql::DeleteSchedule).arg("name", &params.name)).await?.is_empty())
}

/// One fire in the caller's transaction: the compare-and-set on the slot,
/// then the keyed submits. `None` (and nothing written) when another
/// process won the slot.
pub async fn fire_schedule(exec: &impl Executor, params: &FireScheduleParams) -> Result<Option<Vec<Task>>> {
    let mut q = Query::new(Sql::AdvanceSchedule)
        .arg("name", &params.name)
        .arg("expected_ms", params.expected_ms)
        .arg("next_fire_ms", params.next_fire_ms)
        .arg("last_slot_ms", params.last_slot_ms.map_or(Arg::Null, Arg::Int))
        .arg("missed", params.missed);
    if params.unpaused_only {
        q = q.flag("unpaused");
    }
    if exec.rows::<String>(q).await?.is_empty() {
        return Ok(None);
    }
    let mut fired = Vec::with_capacity(params.tasks.len());
    for task in &params.tasks {
        fired.push(submit(exec, task).await?);
    }
    Ok(Some(fired))
}
