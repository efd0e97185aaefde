//! The schedule operations of the seam written once over an
//! [`Executor`]: each statement returns a schedule row as
//! one JSON object in a text column (`ids`), decoded here, so a backend
//! needs no new row mapping. A fire runs in the caller's transaction.

use cairnq_protocol::Sql;
use serde_json::Value;

use super::flows::{Executor, submit};
use super::query::{Arg, Query};
use cairnq_core::Json;
use cairnq_core::Task;
use cairnq_core::store::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow,
};
use cairnq_core::{CatchUp, Overlap, ScheduleOwner};
use cairnq_core::{Error, Result};

/// The store's now (the database clock on Postgres).
pub(crate) async fn clock(exec: &impl Executor) -> Result<i64> {
    let text = exec.ids(Query::new(Sql::SelectClock)).await?.into_iter().next();
    text.and_then(|t| t.parse().ok()).ok_or_else(|| Error::corrupt_row("the store's clock read back no integer"))
}

/// Schedules as asked, with the now they were read at.
pub async fn schedules(exec: &impl Executor, query: &ScheduleQuery) -> Result<ScheduleRead> {
    let now_ms = clock(exec).await?;
    let mut q = Query::new(Sql::SelectSchedules);
    if let Some(name) = &query.name {
        q = q.flag("by_name").arg("name", name);
    }
    q = if query.due { q.flag("due").arg("now_ms", now_ms) } else { q.flag("listing") };
    Ok(ScheduleRead::new(now_ms, decode_all(exec.ids(q).await?)?))
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
    decode_all(exec.ids(q).await?)?.pop().ok_or_else(|| Error::corrupt_row("a schedule upsert returned no row"))
}

/// Pauses or resumes; the row after.
pub async fn pause_schedule(exec: &impl Executor, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
    let q = Query::new(Sql::PauseSchedule)
        .arg("name", &params.name)
        .arg("paused", params.paused)
        .arg("next_fire_ms", params.next_fire_ms.map_or(Arg::Null, Arg::Int));
    Ok(decode_all(exec.ids(q).await?)?.pop())
}

/// Deletes a schedule; whether it existed.
pub async fn delete_schedule(exec: &impl Executor, params: &DeleteScheduleParams) -> Result<bool> {
    Ok(!exec.ids(Query::new(Sql::DeleteSchedule).arg("name", &params.name)).await?.is_empty())
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
    if exec.ids(q).await?.is_empty() {
        return Ok(None);
    }
    let mut fired = Vec::with_capacity(params.tasks.len());
    for task in &params.tasks {
        fired.push(submit(exec, task).await?);
    }
    Ok(Some(fired))
}

fn decode_all(texts: Vec<String>) -> Result<Vec<ScheduleRow>> {
    texts.iter().map(|t| decode_row(t)).collect()
}

/// A schedule row from its JSON object (column name -> value).
pub fn decode_row(text: &str) -> Result<ScheduleRow> {
    let bad = |why: String| Error::corrupt_row(format!("a schedule row: {why}"));
    let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let text_of = |col: &str| {
        value.get(col).and_then(Value::as_str).map(str::to_string).ok_or_else(|| bad(format!("{col} is not text")))
    };
    let int_of =
        |col: &str| value.get(col).and_then(Value::as_i64).ok_or_else(|| bad(format!("{col} is not an integer")));
    let json_of = |col: &str| text_of(col).and_then(|t| Json::parse(t).map_err(|e| bad(format!("{col}: {e}"))));
    let narrow =
        |col: &str| int_of(col).and_then(|n| i32::try_from(n).map_err(|_| bad(format!("{col} is out of range"))));
    let paused = match value.get("paused") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_i64() != Some(0),
        _ => return Err(bad("paused is not a boolean".into())),
    };
    let mut row = ScheduleRow::new(text_of("name")?);
    row.task_name = text_of("task_name")?;
    row.queue = text_of("queue")?;
    row.payload = json_of("payload")?;
    row.priority = narrow("priority")?;
    row.max_attempts = narrow("max_attempts")?;
    row.metadata = json_of("metadata")?;
    row.spec = text_of("spec")?;
    row.tz = text_of("tz")?;
    row.next_fire_ms = int_of("next_fire_ms")?;
    row.last_slot_ms = value.get("last_slot_ms").and_then(Value::as_i64);
    row.missed = int_of("missed")?;
    row.catch_up = CatchUp::from_stored(&text_of("catch_up")?, int_of("catch_up_window_ms")?, int_of("catch_up_max")?)
        .map_err(|e| bad(e.to_string()))?;
    row.overlap = Overlap::parse(&text_of("overlap")?).map_err(|e| bad(e.to_string()))?;
    row.jitter_ms = int_of("jitter_ms")?;
    row.paused = paused;
    row.owner = ScheduleOwner::from_stored(&text_of("owner")?);
    row.created_at_ms = int_of("created_at_ms")?;
    row.updated_at_ms = int_of("updated_at_ms")?;
    Ok(row)
}
