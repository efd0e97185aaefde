//! Statements of `cairnq_protocol::sqlite`, bound by parameter name.
//!
//! cairnq-protocol renders every statement for every combination of its
//! `-- when:` flags at build time, with `?n` placeholders and the name
//! behind each, so picking one is an array lookup and binding is by
//! position. Every connection's `prepare_cached` sees the same text.

use cairnq_core::{Error, Result};
use cairnq_protocol::{Rendering, Statement};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};

use crate::error::sqlite_error;

/// One rendering of a statement, with the statement's name for errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rendered {
    pub(crate) name: &'static str,
    rendering: &'static Rendering,
}

impl Rendered {
    pub(crate) fn sql(&self) -> &'static str {
        self.rendering.sql
    }
}

/// The statement with the optional lines of `flags` switched on.
pub(crate) fn render(statement: &'static Statement, flags: &[&str]) -> Result<Rendered> {
    let rendering = statement.rendering(flags).map_err(|e| Error::Storage {
        message: e.to_string(),
        source: None,
        transient: false,
    })?;
    Ok(Rendered { name: statement.name, rendering })
}

/// Named arguments for a statement; extra ones are ignored.
#[derive(Debug, Default)]
pub(crate) struct Args(Vec<(&'static str, SqlValue)>);

impl Args {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn set(mut self, name: &'static str, value: impl Into<SqlValue>) -> Self {
        self.0.push((name, value.into()));
        self
    }

    pub(crate) fn text(self, name: &'static str, value: &str) -> Self {
        self.set(name, value.to_string())
    }

    pub(crate) fn opt_text(self, name: &'static str, value: Option<&str>) -> Self {
        self.set(name, value.map(str::to_string))
    }

    fn get(&self, name: &str) -> Option<&SqlValue> {
        self.0.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// Runs `rendered` and maps every result row.
pub(crate) fn query<T>(
    conn: &Connection,
    rendered: Rendered,
    args: &Args,
    mut map: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let fail = |e| sqlite_error(rendered.name, e);
    let mut stmt = conn.prepare_cached(rendered.sql()).map_err(fail)?;
    for (position, name) in rendered.rendering.params.iter().enumerate() {
        let value = args.get(name).ok_or_else(|| Error::Storage {
            message: format!("{}: no value for :{name}", rendered.name),
            source: None,
            transient: false,
        })?;
        // Placeholder `?n` is parameter n: the rendering lists them in order.
        stmt.raw_bind_parameter(position + 1, value).map_err(fail)?;
    }
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(fail)? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// Runs `rendered` and maps its first row, if any.
pub(crate) fn query_opt<T>(
    conn: &Connection,
    rendered: Rendered,
    args: &Args,
    map: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    Ok(query(conn, rendered, args, map)?.into_iter().next())
}

/// Runs a statement that returns a single integer (a count, an `exists`).
pub(crate) fn query_int(conn: &Connection, rendered: Rendered, args: &Args) -> Result<i64> {
    let value = query_opt(conn, rendered, args, crate::row::first_int)?;
    Ok(value.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_argument_is_an_error_not_a_panic() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        let rendered = render(&cairnq_protocol::sqlite::TABLE_EXISTS, &[]).expect("no flags");
        let err = query_int(&conn, rendered, &Args::new()).expect_err("no :table given");
        assert!(err.to_string().contains(":table"), "{err}");
        assert_eq!(query_int(&conn, rendered, &Args::new().text("table", "nope")).expect("bound"), 0);
    }
}
