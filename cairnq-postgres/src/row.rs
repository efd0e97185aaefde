//! Decoding rows into core models, one row at a time.
//!
//! Other SDKs write the same tables, so a row may hold what this SDK would
//! never write. Integer columns accept any integral number type (a foreign
//! writer may have declared one differently), JSON columns are read
//! verbatim ([`PgJson`]). A row that still does not decode becomes an
//! [`Undecodable`] naming its id and column, for the caller to isolate (a
//! list reports it, a claim fails just that task). Never a panic.

use std::error::Error as StdError;

use cairnq_core::backend::narrow;
use cairnq_core::store::TaskRow;
use cairnq_core::{Error, HeldLease, Json, QueueAge, Result, Task, TaskCount, TaskRef, TaskStatus, Undecodable};
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Type};

use crate::json::PgJson;

/// One column by name; a value that does not decode is the caller's
/// [`Error::Undecodable`].
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, name: &str) -> Result<T> {
    field(row, name).map_err(|(column, reason)| Undecodable::new(None, column, reason).into_error())
}

/// Why one column did not decode: its name and the reason.
type Bad = (String, String);

fn field<'a, T: FromSql<'a>>(row: &'a Row, name: &str) -> std::result::Result<T, Bad> {
    row.try_get(name).map_err(|e| (name.to_string(), reason(&e)))
}

/// The driver's message, with the cause it keeps in its source chain.
fn reason(error: &tokio_postgres::Error) -> String {
    match StdError::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
}

fn status(row: &Row) -> std::result::Result<TaskStatus, Bad> {
    let text: &str = field(row, "status")?;
    text.parse().map_err(|_| ("status".to_string(), format!("{text:?} is not a task status")))
}

fn json(row: &Row, name: &str) -> std::result::Result<Option<Json>, Bad> {
    Ok(field::<Option<PgJson>>(row, name)?.map(|j| j.0))
}

fn int(row: &Row, name: &str) -> std::result::Result<Option<i64>, Bad> {
    Ok(field::<Option<LooseInt>>(row, name)?.map(|i| i.0))
}

/// [`int`] narrowed to the model's type ([`narrow`]).
fn narrow_int<T: TryFrom<i64>>(row: &Row, name: &str) -> std::result::Result<Option<T>, Bad> {
    int(row, name)?.map(narrow).transpose().map_err(|reason| (name.to_string(), reason))
}

/// A whole `cairnq_tasks` row, or the report of why it does not decode.
pub(crate) fn task_row(row: &Row) -> TaskRow {
    task_at(row).map_err(|(column, reason)| {
        let id = row.try_get::<_, Option<String>>("id").ok().flatten();
        Undecodable::new(id, column, reason)
    })
}

fn task_at(row: &Row) -> std::result::Result<Task, Bad> {
    let required = |name: &str| int(row, name)?.ok_or_else(|| (name.to_string(), "is null".to_string()));
    Ok(Task {
        id: field(row, "id")?,
        name: field(row, "name")?,
        queue: field(row, "queue")?,
        status: status(row)?,
        payload: json(row, "payload")?.unwrap_or_else(Json::null),
        result: json(row, "result")?,
        error: json(row, "error")?,
        metadata: json(row, "metadata")?.unwrap_or_else(Json::empty_object),
        progress: field(row, "progress")?,
        message: field(row, "message")?,
        attempt: narrow_int(row, "attempt")?.unwrap_or(0),
        max_attempts: narrow_int(row, "max_attempts")?.unwrap_or(3),
        priority: narrow_int(row, "priority")?.unwrap_or(0),
        worker_id: field(row, "worker_id")?,
        lease_until_ms: int(row, "lease_until_ms")?,
        run_at_ms: required("run_at_ms")?,
        cancel_requested_at_ms: int(row, "cancel_requested_at_ms")?,
        parent_id: field(row, "parent_id")?,
        root_id: field(row, "root_id")?,
        correlation_id: field(row, "correlation_id")?,
        created_at_ms: required("created_at_ms")?,
        updated_at_ms: required("updated_at_ms")?,
        completed_at_ms: int(row, "completed_at_ms")?,
    })
}

/// A whole row of a statement that touches one task: an undecodable row
/// is the caller's error.
pub(crate) fn task(row: &Row) -> Result<Task> {
    task_row(row).map_err(Undecodable::into_error)
}

/// An `id, status` row.
pub(crate) fn task_ref(row: &Row) -> Result<TaskRef> {
    let id: String = col(row, "id")?;
    let status = status(row).map_err(|(column, reason)| Undecodable::new(Some(id.clone()), column, reason))?;
    Ok(TaskRef { id, status })
}

/// A `queue, status, count` row; a status no protocol state names is
/// counted as unrecognized, never an error.
pub(crate) fn task_count(row: &Row) -> Result<TaskCount> {
    let count: i64 = col(row, "count")?;
    let status: Option<&str> = col(row, "status")?;
    Ok(TaskCount {
        queue: col(row, "queue")?,
        status: status.and_then(|s| s.parse().ok()),
        count: u64::try_from(count).map_err(|_| Error::corrupt_row(format!("negative count {count}")))?,
    })
}

/// A `queue, id, age_ms` row.
pub(crate) fn queue_age(row: &Row) -> Result<QueueAge> {
    Ok(QueueAge::from_ms(col::<String>(row, "queue")?, col::<String>(row, "id")?, col(row, "age_ms")?))
}

/// An `id, cancel_requested_at_ms` row.
pub(crate) fn held_lease(row: &Row) -> Result<HeldLease> {
    Ok(HeldLease { id: col(row, "id")?, cancel_requested_at_ms: col(row, "cancel_requested_at_ms")? })
}

/// An integer read from any integral number column: a foreign writer's
/// `double precision` priority of `2` is `2`; `1.5` does not decode.
struct LooseInt(i64);

impl<'a> FromSql<'a> for LooseInt {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn StdError + Sync + Send>> {
        let value = match *ty {
            Type::INT2 => i64::from(i16::from_sql(ty, raw)?),
            Type::INT4 => i64::from(i32::from_sql(ty, raw)?),
            Type::INT8 => i64::from_sql(ty, raw)?,
            _ => {
                let float =
                    if *ty == Type::FLOAT4 { f64::from(f32::from_sql(ty, raw)?) } else { f64::from_sql(ty, raw)? };
                if float.fract() != 0.0 || float.abs() >= 9.2e18 {
                    return Err(format!("{float} is not an integer").into());
                }
                float as i64
            }
        };
        Ok(Self(value))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::FLOAT4 | Type::FLOAT8)
    }
}
