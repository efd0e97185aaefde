//! Rows to core models.
//!
//! Decoding tolerates what other SDKs (and SQLite itself) may store: an
//! integral REAL where an integer is expected, an INTEGER where a REAL is
//! (SQLite hands `progress = 1.0` back through RETURNING as `1`). Anything
//! else that does not fit is a corrupt-row error, never a panic.

use std::fmt::Debug;

use cairnq_core::json::from_text;
use cairnq_core::{Error, HeldLease, Result, Task, TaskCount, TaskRef, TaskStatus};
use rusqlite::Row;
use rusqlite::types::ValueRef;
use serde_json::Value;

/// The `cairnq_tasks` columns a [`Task`] is decoded from, in field order.
const TASK_COLUMNS: [&str; 23] = [
    "id",
    "name",
    "queue",
    "status",
    "payload",
    "result",
    "error",
    "metadata",
    "progress",
    "message",
    "attempt",
    "max_attempts",
    "priority",
    "worker_id",
    "lease_until_ms",
    "run_at_ms",
    "cancel_requested_at_ms",
    "parent_id",
    "root_id",
    "correlation_id",
    "created_at_ms",
    "updated_at_ms",
    "completed_at_ms",
];

/// Where each of [`TASK_COLUMNS`] sits in a result row. Found once per
/// statement run from the statement's column names (looking every column
/// up by name on every row scanned all names each time).
struct TaskLayout([Option<usize>; 23]);

impl TaskLayout {
    fn of(row: &Row<'_>) -> Self {
        let mut at = [None; 23];
        for (index, name) in row.as_ref().column_names().enumerate() {
            if let Some(field) = TASK_COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(name)) {
                at[field].get_or_insert(index);
            }
        }
        Self(at)
    }

    fn column(&self, field: usize) -> Result<Named> {
        let name = TASK_COLUMNS.get(field).copied().unwrap_or("?");
        let index = self.0.get(field).copied().flatten().ok_or_else(|| corrupt(name, "missing from the result"))?;
        Ok(Named(index, name))
    }
}

/// A column found by name once, read by index; errors name it.
#[derive(Clone, Copy)]
struct Named(usize, &'static str);

impl Debug for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Debug::fmt(self.1, f)
    }
}

impl Column for Named {
    fn read<'r>(self, row: &'r Row<'_>) -> rusqlite::Result<ValueRef<'r>> {
        row.get_ref(self.0)
    }
}

/// A decoder of whole `cairnq_tasks` rows (`select *` / `returning *`),
/// for one statement run.
pub(crate) fn task() -> impl FnMut(&Row<'_>) -> Result<Task> {
    let mut layout = None;
    move |row| {
        let layout = layout.get_or_insert_with(|| TaskLayout::of(row));
        task_at(row, layout)
    }
}

fn task_at(row: &Row<'_>, layout: &TaskLayout) -> Result<Task> {
    let c = |field| layout.column(field);
    Ok(Task {
        id: text(row, c(0)?)?,
        name: text(row, c(1)?)?,
        queue: text(row, c(2)?)?,
        status: status(row, c(3)?)?,
        payload: json(row, c(4)?)?.unwrap_or(Value::Null),
        result: json(row, c(5)?)?,
        error: json(row, c(6)?)?,
        metadata: json(row, c(7)?)?.unwrap_or_else(|| Value::Object(Default::default())),
        progress: opt_real(row, c(8)?)?,
        message: opt_text(row, c(9)?)?,
        attempt: int(row, c(10)?)?,
        max_attempts: int(row, c(11)?)?,
        priority: int(row, c(12)?)?,
        worker_id: opt_text(row, c(13)?)?,
        lease_until_ms: opt_int(row, c(14)?)?,
        run_at_ms: int(row, c(15)?)?,
        cancel_requested_at_ms: opt_int(row, c(16)?)?,
        parent_id: opt_text(row, c(17)?)?,
        root_id: opt_text(row, c(18)?)?,
        correlation_id: opt_text(row, c(19)?)?,
        created_at_ms: int(row, c(20)?)?,
        updated_at_ms: int(row, c(21)?)?,
        completed_at_ms: opt_int(row, c(22)?)?,
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

/// A column by index, or found by name (errors name what was asked).
pub(crate) trait Column: Copy + Debug {
    fn read<'r>(self, row: &'r Row<'_>) -> rusqlite::Result<ValueRef<'r>>;
}

impl Column for usize {
    fn read<'r>(self, row: &'r Row<'_>) -> rusqlite::Result<ValueRef<'r>> {
        row.get_ref(self)
    }
}

fn corrupt(column: impl Debug, what: &str) -> Error {
    Error::corrupt_row(format!("cairnq_tasks column {column:?}: {what}"))
}

fn value<'r>(row: &'r Row<'_>, column: impl Column) -> Result<ValueRef<'r>> {
    column.read(row).map_err(|e| corrupt(column, &e.to_string()))
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

fn json(row: &Row<'_>, column: Named) -> Result<Option<Value>> {
    match value(row, column)? {
        ValueRef::Null => Ok(None),
        // Parsed straight from SQLite's buffer: no owned copy of the text.
        ValueRef::Text(bytes) => {
            let text = std::str::from_utf8(bytes).map_err(|_| corrupt(column, "not UTF-8"))?;
            from_text(column.1, text).map(Some)
        }
        other => Err(corrupt(column, &format!("expected JSON text, found {:?}", other.data_type()))),
    }
}

fn status(row: &Row<'_>, column: impl Column) -> Result<TaskStatus> {
    let text = text(row, column)?;
    text.parse().map_err(|_| corrupt(column, &format!("{text:?} is not a task status")))
}
