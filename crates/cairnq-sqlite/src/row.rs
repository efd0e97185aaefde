//! Rows to core models.
//!
//! Decoding tolerates what other SDKs (and SQLite itself) may store: an
//! integral REAL where an integer is expected, an INTEGER where a REAL is
//! (SQLite hands `progress = 1.0` back through RETURNING as `1`). Anything
//! else that does not fit is a corrupt-row error, never a panic.

use std::fmt::Debug;

use cairnq_core::json::from_text;
use cairnq_core::{Error, HeldLease, Result, Task, TaskCount, TaskRef, TaskStatus};
use rusqlite::types::ValueRef;
use rusqlite::{Row, RowIndex};
use serde_json::Value;

/// A whole `cairnq_tasks` row (`select *` / `returning *`).
pub(crate) fn task(row: &Row<'_>) -> Result<Task> {
    Ok(Task {
        id: text(row, "id")?,
        name: text(row, "name")?,
        queue: text(row, "queue")?,
        status: status(row, "status")?,
        payload: json(row, "payload")?.unwrap_or(Value::Null),
        result: json(row, "result")?,
        error: json(row, "error")?,
        metadata: json(row, "metadata")?.unwrap_or_else(|| Value::Object(Default::default())),
        progress: opt_real(row, "progress")?,
        message: opt_text(row, "message")?,
        attempt: int(row, "attempt")?,
        max_attempts: int(row, "max_attempts")?,
        priority: int(row, "priority")?,
        worker_id: opt_text(row, "worker_id")?,
        lease_until_ms: opt_int(row, "lease_until_ms")?,
        run_at_ms: int(row, "run_at_ms")?,
        cancel_requested_at_ms: opt_int(row, "cancel_requested_at_ms")?,
        parent_id: opt_text(row, "parent_id")?,
        root_id: opt_text(row, "root_id")?,
        correlation_id: opt_text(row, "correlation_id")?,
        created_at_ms: int(row, "created_at_ms")?,
        updated_at_ms: int(row, "updated_at_ms")?,
        completed_at_ms: opt_int(row, "completed_at_ms")?,
    })
}

/// `(id, status)`.
pub(crate) fn task_ref(row: &Row<'_>) -> Result<TaskRef> {
    Ok(TaskRef { id: text(row, 0)?, status: status(row, 1)? })
}

/// `(id, cancel_requested_at_ms)`.
pub(crate) fn held_lease(row: &Row<'_>) -> Result<HeldLease> {
    Ok(HeldLease { id: text(row, 0)?, cancel_requested_at_ms: opt_int(row, 1)? })
}

/// `(queue, status, count)`.
pub(crate) fn task_count(row: &Row<'_>) -> Result<TaskCount> {
    let count = int(row, 2)?;
    let count = u64::try_from(count).map_err(|_| corrupt(2, &format!("negative count {count}")))?;
    Ok(TaskCount { queue: text(row, 0)?, status: status(row, 1)?, count })
}

/// `(id, queue)` of a row a statement moved.
pub(crate) fn id_and_queue(row: &Row<'_>) -> Result<(String, String)> {
    Ok((text(row, 0)?, text(row, 1)?))
}

pub(crate) trait Column: RowIndex + Copy + Debug {}
impl<T: RowIndex + Copy + Debug> Column for T {}

fn corrupt(column: impl Debug, what: &str) -> Error {
    Error::corrupt_row(format!("cairnq_tasks column {column:?}: {what}"))
}

fn value<'r>(row: &'r Row<'_>, column: impl Column) -> Result<ValueRef<'r>> {
    row.get_ref(column).map_err(|e| corrupt(column, &e.to_string()))
}

fn opt_text(row: &Row<'_>, column: impl Column) -> Result<Option<String>> {
    match value(row, column)? {
        ValueRef::Null => Ok(None),
        ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| corrupt(column, "not UTF-8")),
        other => Err(corrupt(column, &format!("expected text, found {:?}", other.data_type()))),
    }
}

pub(crate) fn text(row: &Row<'_>, column: impl Column) -> Result<String> {
    opt_text(row, column)?.ok_or_else(|| corrupt(column, "is null"))
}

fn opt_int(row: &Row<'_>, column: impl Column) -> Result<Option<i64>> {
    match value(row, column)? {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i)),
        // Exactly integral and inside i64: another writer stored it as REAL.
        ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Some(f as i64)),
        other => Err(corrupt(column, &format!("expected an integer, found {:?}", other.data_type()))),
    }
}

pub(crate) fn int(row: &Row<'_>, column: impl Column) -> Result<i64> {
    opt_int(row, column)?.ok_or_else(|| corrupt(column, "is null"))
}

fn opt_real(row: &Row<'_>, column: impl Column) -> Result<Option<f64>> {
    match value(row, column)? {
        ValueRef::Null => Ok(None),
        ValueRef::Real(f) => Ok(Some(f)),
        ValueRef::Integer(i) => Ok(Some(i as f64)),
        other => Err(corrupt(column, &format!("expected a number, found {:?}", other.data_type()))),
    }
}

fn json(row: &Row<'_>, column: &'static str) -> Result<Option<Value>> {
    opt_text(row, column)?.map(|text| from_text(column, &text)).transpose()
}

fn status(row: &Row<'_>, column: impl Column) -> Result<TaskStatus> {
    let text = text(row, column)?;
    text.parse().map_err(|_| corrupt(column, &format!("{text:?} is not a task status")))
}
