//! Protocol statements run by [`Query`]: the rendering cairnq-protocol made
//! at build time for the query's flags (`?n` placeholders, the parameter
//! behind each in order), its arguments bound by position. Every
//! connection's `prepare_cached` sees the same text.

use cairnq_core::{Error, Result};
use cairnq_protocol::sqlite;
use cairnq_sql::{Arg, Query, purpose};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};

use crate::error::sqlite_error;

/// An argument as SQLite stores it: booleans as 0/1, lists as JSON array
/// text (statements read them with `json_each`), JSON documents as text.
fn value(arg: &Arg) -> SqlValue {
    match arg {
        Arg::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Arg::Int(i) => SqlValue::Integer(*i),
        Arg::Real(f) => SqlValue::Real(*f),
        Arg::Text(text) => SqlValue::Text(text.clone()),
        Arg::Texts(items) => SqlValue::Text(serde_json::Value::from(items.clone()).to_string()),
        Arg::Json(json) => SqlValue::Text(json.as_str().to_string()),
        Arg::OptTexts(items) => SqlValue::Text(serde_json::Value::from(items.clone()).to_string()),
        Arg::Ints(items) => SqlValue::Text(serde_json::Value::from(items.clone()).to_string()),
        Arg::Jsons(items) => SqlValue::Text(serde_json::to_string(items).unwrap_or_default()),
        _ => SqlValue::Null,
    }
}

fn statement_error(message: String) -> Error {
    Error::Storage { message, source: None, transient: false }
}

/// Runs `query` and maps every result row.
pub(crate) fn query<T>(conn: &Connection, query: &Query, mut map: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Vec<T>> {
    let statement = sqlite::statement(query.sql);
    let rendering = statement.rendering(&query.flags).map_err(|e| statement_error(e.to_string()))?;
    let fail = |e| sqlite_error(purpose(query.sql), statement.name, e);
    let mut stmt = conn.prepare_cached(rendering.sql).map_err(fail)?;
    for (position, name) in rendering.params.iter().enumerate() {
        let arg =
            query.get(name).ok_or_else(|| statement_error(format!("{}: no value for :{name}", statement.name)))?;
        // Placeholder `?n` is parameter n: the rendering lists them in order.
        stmt.raw_bind_parameter(position + 1, value(arg)).map_err(fail)?;
    }
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(fail)? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// Runs `query` and maps its first row, if any.
pub(crate) fn query_opt<T>(conn: &Connection, q: &Query, map: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Option<T>> {
    Ok(query(conn, q, map)?.into_iter().next())
}

/// Runs a statement that returns a single integer (a count, an `exists`).
pub(crate) fn query_int(conn: &Connection, q: &Query) -> Result<i64> {
    Ok(query_opt(conn, q, crate::row::first_int)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use cairnq_sql::Sql;

    use super::*;

    #[test]
    fn a_missing_argument_is_an_error_not_a_panic() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        let err = query_int(&conn, &Query::new(Sql::TableExists)).expect_err("no :table given");
        assert!(err.to_string().contains(":table"), "{err}");
        assert_eq!(query_int(&conn, &Query::new(Sql::TableExists).arg("table", "nope")).expect("bound"), 0);
    }
}
