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
//! `Undecodable` naming its id and column, and the caller isolates it (a
//! list reports it, a claim fails just that task). Never a panic.
//!
//! Here is how SQLite reads one cell ([`Cells`]); the row shapes are
//! cairnq-sql's, written once for every dialect.

use cairnq_core::store::TaskRow;
use cairnq_core::{Error, Json, QueueAge, Result, Task, TaskCount, Undecodable};
use cairnq_sql::{CellError, Decoder, FromRow, SqlRow};
use rusqlite::Row;
use rusqlite::types::ValueRef;

use crate::error::sqlite_error;

/// A rusqlite row read as cairnq-sql's typed cells.
pub(crate) struct Cells<'a, 'r>(pub(crate) &'a Row<'r>);

impl SqlRow for Cells<'_, '_> {
    fn position(&self, name: &str) -> Option<usize> {
        // No allocation: the statement compares its column names in place.
        self.0.as_ref().column_index(name).ok()
    }

    fn positions<const N: usize>(&self, names: [&str; N]) -> [Option<usize>; N] {
        // Each column's name is fetched from SQLite once, not once per name.
        let statement = self.0.as_ref();
        let mut at = [None; N];
        for index in 0..statement.column_count() {
            let Ok(column) = statement.column_name(index) else { continue };
            if let Some(field) = names.iter().position(|n| n.eq_ignore_ascii_case(column)) {
                at[field].get_or_insert(index);
            }
        }
        at
    }

    fn text(&self, at: usize) -> Result<Option<String>, CellError> {
        opt_text(self.get(at)?)
    }

    fn int(&self, at: usize) -> Result<Option<i64>, CellError> {
        opt_int(self.get(at)?)
    }

    fn real(&self, at: usize) -> Result<Option<f64>, CellError> {
        opt_real(self.get(at)?)
    }

    fn json(&self, at: usize) -> Result<Option<Json>, CellError> {
        json(self.get(at)?)
    }

    fn boolean(&self, at: usize) -> Result<Option<bool>, CellError> {
        Ok(opt_int(self.get(at)?)?.map(|n| n != 0))
    }
}

impl Cells<'_, '_> {
    fn get(&self, at: usize) -> Result<ValueRef<'_>, CellError> {
        self.0.get_ref(at).map_err(|e| e.to_string())
    }
}

/// A decoder of rows of shape `T`, for one statement run (see
/// [`Decoder`]).
pub(crate) fn decoded<T: FromRow>() -> impl FnMut(&Row<'_>) -> Result<T> {
    let mut decoder = Decoder::<T>::new();
    move |row| decoder.decode(&Cells(row))
}

/// A decoder of whole `cairnq_tasks` rows (`select *` / `returning *`),
/// for one statement run. The outer error is a driver failure; the inner
/// [`TaskRow`] is this row's own outcome.
pub(crate) fn task() -> impl FnMut(&Row<'_>) -> Result<TaskRow> {
    decoded::<TaskRow>()
}

/// A decoder for statements that touch one row: an undecodable row is the
/// caller's error ([`Error::Undecodable`](cairnq_core::Error::Undecodable)).
pub(crate) fn one_task() -> impl FnMut(&Row<'_>) -> Result<Task> {
    decoded::<Task>()
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

/// A single text column (ids a statement returned, meta values).
pub(crate) fn first_text(row: &Row<'_>) -> Result<String> {
    cell(row, 0, "value", text)
}

/// A single integer column (counts, `exists`).
pub(crate) fn first_int(row: &Row<'_>) -> Result<i64> {
    cell(row, 0, "value", int)
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
