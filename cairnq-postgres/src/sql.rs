//! Statement arguments as Postgres wants them.
//!
//! The shared flows build driver-neutral [`Arg`]s; a parameter's Postgres
//! type is known only once the statement is prepared (`:limit::bigint`,
//! `:max_attempts::integer`). [`PgArg`] writes each value in the type the
//! parameter has, narrowing integers with a check, so one argument type
//! serves every statement.

use std::error::Error as StdError;

use bytes::BytesMut;
use cairnq_sql::Arg;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::json::JsonText;

/// An [`Arg`] bound to a parameter of whatever type it was prepared with.
#[derive(Debug)]
pub(crate) struct PgArg<'a>(pub(crate) &'a Arg);

type Outcome = Result<IsNull, Box<dyn StdError + Sync + Send>>;

fn int(value: i64, ty: &Type, out: &mut BytesMut) -> Outcome {
    match *ty {
        Type::INT2 => i16::try_from(value)?.to_sql(ty, out),
        Type::INT4 => i32::try_from(value)?.to_sql(ty, out),
        Type::FLOAT8 => (value as f64).to_sql(ty, out),
        _ => value.to_sql(ty, out),
    }
}

fn ints(values: &[i64], ty: &Type, out: &mut BytesMut) -> Outcome {
    match *ty {
        Type::INT4_ARRAY => values.iter().map(|v| i32::try_from(*v)).collect::<Result<Vec<_>, _>>()?.to_sql(ty, out),
        Type::INT2_ARRAY => values.iter().map(|v| i16::try_from(*v)).collect::<Result<Vec<_>, _>>()?.to_sql(ty, out),
        _ => values.to_sql(ty, out),
    }
}

impl ToSql for PgArg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Outcome {
        match self.0 {
            Arg::Bool(b) => b.to_sql(ty, out),
            Arg::Int(i) => int(*i, ty, out),
            Arg::Real(f) => f.to_sql(ty, out),
            Arg::Text(text) => text.as_str().to_sql(ty, out),
            Arg::Texts(items) => items.to_sql(ty, out),
            Arg::OptTexts(items) => items.to_sql(ty, out),
            Arg::Json(json) => JsonText(json).to_sql(ty, out),
            Arg::Jsons(items) => items.iter().map(JsonText).collect::<Vec<_>>().to_sql(ty, out),
            Arg::Ints(items) => ints(items, ty, out),
            _ => Ok(IsNull::Yes),
        }
    }

    /// Any type: the value is written (or refused with a clear error) in
    /// `to_sql`, which knows both the value and the parameter's type.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}
