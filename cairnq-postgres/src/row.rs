//! Decoding rows into core models, one row at a time.
//!
//! Other SDKs write the same tables, so a row may hold what this SDK would
//! never write. Integer columns accept any integral number type (a foreign
//! writer may have declared one differently), JSON columns are read
//! verbatim ([`PgJson`]). A row that still does not decode becomes an
//! [`Undecodable`] naming its id and column, for the caller to isolate (a
//! list reports it, a claim fails just that task). Never a panic.
//!
//! Here is how Postgres reads one cell ([`Cells`]); the row shapes are
//! cairnq-sql's, written once for every dialect.

use std::error::Error as StdError;

use cairnq_core::{Error, Json, QueueAge, Result, TaskCount, Undecodable};
use cairnq_sql::{CellError, Decoder, FromRow, SqlRow};
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

/// A tokio-postgres row read as cairnq-sql's typed cells.
pub(crate) struct Cells<'a>(pub(crate) &'a Row);

impl Cells<'_> {
    fn get<'a, T: FromSql<'a>>(&'a self, at: usize) -> Result<T, CellError> {
        self.0.try_get(at).map_err(|e| reason(&e))
    }
}

impl SqlRow for Cells<'_> {
    fn position(&self, name: &str) -> Option<usize> {
        self.0.columns().iter().position(|c| c.name().eq_ignore_ascii_case(name))
    }

    fn text(&self, at: usize) -> Result<Option<String>, CellError> {
        self.get(at)
    }

    fn int(&self, at: usize) -> Result<Option<i64>, CellError> {
        Ok(self.get::<Option<LooseInt>>(at)?.map(|i| i.0))
    }

    fn real(&self, at: usize) -> Result<Option<f64>, CellError> {
        self.get(at)
    }

    fn json(&self, at: usize) -> Result<Option<Json>, CellError> {
        match self.0.columns().get(at).map(|c| c.type_()) {
            // Extension tables keep documents as text (the schedules' payload).
            Some(&Type::TEXT | &Type::VARCHAR) => {
                self.get::<Option<String>>(at)?.map(|t| Json::parse(t).map_err(|e| e.to_string())).transpose()
            }
            _ => Ok(self.get::<Option<PgJson>>(at)?.map(|j| j.0)),
        }
    }

    fn boolean(&self, at: usize) -> Result<Option<bool>, CellError> {
        match self.0.columns().get(at).map(|c| c.type_()) {
            Some(&Type::BOOL) => self.get(at),
            _ => Ok(self.int(at)?.map(|n| n != 0)),
        }
    }
}

/// Rows of shape `T` (see [`Decoder`]).
pub(crate) fn decode_all<T: FromRow>(rows: &[Row]) -> Result<Vec<T>> {
    let mut decoder = Decoder::<T>::new();
    rows.iter().map(|row| decoder.decode(&Cells(row))).collect()
}

/// One row of shape `T`.
pub(crate) fn decode<T: FromRow>(row: &Row) -> Result<T> {
    Decoder::<T>::new().decode(&Cells(row))
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
