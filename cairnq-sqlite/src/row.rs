//! Rows to core models, one row at a time.
//!
//! Other SDKs write the same file, so a row may hold what this SDK would
//! never write. Decoding is as tolerant as the other SDKs where a value has
//! one sensible meaning: an integral REAL where an integer is expected (the
//! Python SDK stores `priority=2.0` as REAL), an INTEGER where a REAL is
//! (SQLite hands `progress = 1.0` back through RETURNING as `1`), a NULL
//! payload as `null`, NULL metadata as `{}`, NULL counters as their column
//! defaults, a lone surrogate escape in JSON text (kept verbatim, see
//! [`Json`]). Anything else does not decode: the row becomes an
//! [`Undecodable`] naming its id and column, and the caller isolates it (a
//! list reports it, a claim fails just that task). Never a panic.

use cairnq_core::backend::narrow;
use cairnq_core::store::TaskRow;
use cairnq_core::{Error, HeldLease, Json, QueueAge, Result, Task, TaskCount, TaskRef, TaskStatus, Undecodable};
use rusqlite::Row;
use rusqlite::types::ValueRef;

use crate::error::sqlite_error;

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

/// Why one column did not decode: its name and the reason.
type Bad = (&'static str, String);
type Field<T> = std::result::Result<T, Bad>;

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
}

/// One row's cells, read by field number, each failure naming its column.
struct Cells<'a, 'r> {
    row: &'a Row<'r>,
    layout: &'a TaskLayout,
}

impl Cells<'_, '_> {
    fn get(&self, field: usize) -> Field<ValueRef<'_>> {
        let name = TASK_COLUMNS.get(field).copied().unwrap_or("?");
        let index = self.layout.0.get(field).copied().flatten().ok_or((name, "missing from the result".to_string()))?;
        self.row.get_ref(index).map_err(|e| (name, e.to_string()))
    }

    fn named<T>(&self, field: usize, decode: impl FnOnce(ValueRef<'_>) -> Result<T, String>) -> Field<T> {
        let name = TASK_COLUMNS.get(field).copied().unwrap_or("?");
        decode(self.get(field)?).map_err(|reason| (name, reason))
    }
}

/// A decoder of whole `cairnq_tasks` rows (`select *` / `returning *`),
/// for one statement run. The outer error is a driver failure; the inner
/// [`TaskRow`] is this row's own outcome.
pub(crate) fn task() -> impl FnMut(&Row<'_>) -> Result<TaskRow> {
    let mut layout = None;
    move |row| {
        let layout = layout.get_or_insert_with(|| TaskLayout::of(row));
        let cells = Cells { row, layout };
        Ok(task_at(&cells).map_err(|(column, reason)| {
            let id = cells.named(0, opt_text).ok().flatten();
            Undecodable::new(id, column, reason)
        }))
    }
}

/// A decoder for statements that touch one row: an undecodable row is the
/// caller's error ([`Error::Undecodable`]).
pub(crate) fn one_task() -> impl FnMut(&Row<'_>) -> Result<Task> {
    let mut decode = task();
    move |row| decode(row)?.map_err(Undecodable::into_error)
}

fn task_at(c: &Cells<'_, '_>) -> Field<Task> {
    Ok(Task {
        id: c.named(0, text)?,
        name: c.named(1, text)?,
        queue: c.named(2, text)?,
        status: c.named(3, status)?,
        payload: c.named(4, json)?.unwrap_or_else(Json::null),
        result: c.named(5, json)?,
        error: c.named(6, json)?,
        metadata: c.named(7, json)?.unwrap_or_else(Json::empty_object),
        progress: c.named(8, opt_real)?,
        message: c.named(9, opt_text)?,
        attempt: c.named(10, opt_narrow)?.unwrap_or(0),
        max_attempts: c.named(11, opt_narrow)?.unwrap_or(3),
        priority: c.named(12, opt_narrow)?.unwrap_or(0),
        worker_id: c.named(13, opt_text)?,
        lease_until_ms: c.named(14, opt_int)?,
        run_at_ms: c.named(15, int)?,
        cancel_requested_at_ms: c.named(16, opt_int)?,
        parent_id: c.named(17, opt_text)?,
        root_id: c.named(18, opt_text)?,
        correlation_id: c.named(19, opt_text)?,
        created_at_ms: c.named(20, int)?,
        updated_at_ms: c.named(21, int)?,
        completed_at_ms: c.named(22, opt_int)?,
    })
}

/// Reads column `index` of a row of a small fixed-shape statement; a cell
/// that does not decode is an [`Error::Undecodable`] naming the column.
fn cell<T>(
    row: &Row<'_>,
    index: usize,
    column: &str,
    decode: impl FnOnce(ValueRef<'_>) -> Result<T, String>,
) -> Result<T> {
    let value = row.get_ref(index).map_err(|e| sqlite_error(&format!("read the {column} column"), column, e))?;
    decode(value).map_err(|reason| Undecodable::new(None, column, reason).into_error())
}

/// `(id, status)`.
pub(crate) fn task_ref(row: &Row<'_>) -> Result<TaskRef> {
    let id = cell(row, 0, "id", text)?;
    let status = cell(row, 1, "status", status).map_err(|e| with_id(e, &id))?;
    Ok(TaskRef { id, status })
}

/// `(id, cancel_requested_at_ms)`.
pub(crate) fn held_lease(row: &Row<'_>) -> Result<HeldLease> {
    Ok(HeldLease {
        id: cell(row, 0, "id", text)?,
        cancel_requested_at_ms: cell(row, 1, "cancel_requested_at_ms", opt_int)?,
    })
}

/// `(queue, status, count)`; a status no protocol state names is counted
/// as unrecognized, never an error.
pub(crate) fn task_count(row: &Row<'_>) -> Result<TaskCount> {
    let count = cell(row, 2, "count", int)?;
    let count = u64::try_from(count).map_err(|_| Error::corrupt_row(format!("negative count {count}")))?;
    let status = cell(row, 1, "status", opt_text)?.and_then(|s| s.parse().ok());
    Ok(TaskCount { queue: cell(row, 0, "queue", text)?, status, count })
}

/// A `queue, id, age_ms` row.
pub(crate) fn queue_age(row: &Row<'_>) -> Result<QueueAge> {
    Ok(QueueAge::from_ms(cell(row, 0, "queue", text)?, cell(row, 1, "id", text)?, cell(row, 2, "age_ms", int)?))
}

/// `(id, queue)` of a row a statement moved.
pub(crate) fn id_and_queue(row: &Row<'_>) -> Result<(String, String)> {
    Ok((cell(row, 0, "id", text)?, cell(row, 1, "queue", text)?))
}

/// A single text column (ids a statement returned, meta values).
pub(crate) fn first_text(row: &Row<'_>) -> Result<String> {
    cell(row, 0, "value", text)
}

/// A single integer column (counts, `exists`).
pub(crate) fn first_int(row: &Row<'_>) -> Result<i64> {
    cell(row, 0, "value", int)
}

fn with_id(error: Error, id: &str) -> Error {
    match error {
        Error::Undecodable(mut row) => {
            row.task_id = Some(id.to_string());
            Error::Undecodable(row)
        }
        other => other,
    }
}

fn opt_text(value: ValueRef<'_>) -> Result<Option<String>, String> {
    match value {
        ValueRef::Null => Ok(None),
        ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| "not UTF-8".to_string()),
        other => Err(format!("expected text, found {:?}", other.data_type())),
    }
}

fn text(value: ValueRef<'_>) -> Result<String, String> {
    opt_text(value)?.ok_or_else(|| "is null".to_string())
}

/// [`opt_int`] narrowed to the model's type ([`narrow`]).
fn opt_narrow<T: TryFrom<i64>>(value: ValueRef<'_>) -> Result<Option<T>, String> {
    opt_int(value)?.map(narrow).transpose()
}

fn opt_int(value: ValueRef<'_>) -> Result<Option<i64>, String> {
    match value {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i)),
        // Exactly integral and inside i64: another writer stored it as REAL.
        ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Some(f as i64)),
        ValueRef::Real(f) => Err(format!("{f} is not an integer")),
        other => Err(format!("expected an integer, found {:?}", other.data_type())),
    }
}

fn int(value: ValueRef<'_>) -> Result<i64, String> {
    opt_int(value)?.ok_or_else(|| "is null".to_string())
}

fn opt_real(value: ValueRef<'_>) -> Result<Option<f64>, String> {
    match value {
        ValueRef::Null => Ok(None),
        ValueRef::Real(f) => Ok(Some(f)),
        ValueRef::Integer(i) => Ok(Some(i as f64)),
        other => Err(format!("expected a number, found {:?}", other.data_type())),
    }
}

fn json(value: ValueRef<'_>) -> Result<Option<Json>, String> {
    match value {
        ValueRef::Null => Ok(None),
        ValueRef::Text(bytes) => {
            let text = String::from_utf8(bytes.to_vec()).map_err(|_| "not UTF-8".to_string())?;
            Json::parse(text).map(Some).map_err(|e| e.0)
        }
        other => Err(format!("expected JSON text, found {:?}", other.data_type())),
    }
}

fn status(value: ValueRef<'_>) -> Result<TaskStatus, String> {
    let found = text(value)?;
    found.parse().map_err(|_| format!("{found:?} is not a task status"))
}
