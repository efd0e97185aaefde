//! Statements of `cairnq_protocol::sqlite`, rendered once per flag
//! combination and bound by parameter name.
//!
//! A statement's `-- when:` lines specialize it (filters given, one queue vs
//! many); each rendering is cached for the life of the process, so every
//! connection's `prepare_cached` sees the same text. Only the parameters a
//! rendering actually uses are bound.

use std::collections::HashMap;
use std::sync::OnceLock;

use cairnq_core::{Error, Result};
use cairnq_protocol::Statement;
use parking_lot::Mutex;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};

use crate::error::sqlite_error;

/// One rendering of a statement.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
    /// `(name, ":name")` per parameter the text uses.
    params: Vec<(&'static str, String)>,
}

/// Renderings are few (statements x flag combinations actually used), so
/// they are leaked once and shared as `'static`.
type Cache = Mutex<HashMap<(&'static str, u64), &'static Rendered>>;

/// The statement with the optional lines of `flags` switched on.
pub(crate) fn render(statement: &'static Statement, flags: &[&str]) -> &'static Rendered {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let known = statement.flags();
    debug_assert!(flags.iter().all(|f| known.contains(f)), "{}: unknown flag in {flags:?}", statement.name);
    let mask = known.iter().enumerate().filter(|(_, k)| flags.contains(k)).fold(0u64, |m, (i, _)| m | 1 << i);
    let mut cache = CACHE.get_or_init(Cache::default).lock();
    cache.entry((statement.name, mask)).or_insert_with(|| {
        let (sql, params) = statement.render(|flag| flags.contains(&flag));
        Box::leak(Box::new(Rendered {
            name: statement.name,
            sql: Box::leak(sql.into_boxed_str()),
            params: params.into_iter().map(|p| (p, format!(":{p}"))).collect(),
        }))
    })
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
    rendered: &Rendered,
    args: &Args,
    mut map: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let fail = |e| sqlite_error(rendered.name, e);
    let mut stmt = conn.prepare_cached(rendered.sql).map_err(fail)?;
    for (position, (name, placeholder)) in rendered.params.iter().enumerate() {
        let value = args.get(name).ok_or_else(|| Error::Storage {
            message: format!("{}: no value for :{name}", rendered.name),
            source: None,
            transient: false,
        })?;
        // SQLite numbers named parameters in order of first appearance, as
        // the rendering lists them; the name check is an array lookup,
        // the search by name the fallback.
        let index = match stmt.parameter_name(position + 1) {
            Some(found) if found == placeholder => position + 1,
            _ => stmt.parameter_index(placeholder).map_err(fail)?.unwrap_or_default(),
        };
        stmt.raw_bind_parameter(index, value).map_err(fail)?;
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
    rendered: &Rendered,
    args: &Args,
    map: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    Ok(query(conn, rendered, args, map)?.into_iter().next())
}

/// Runs a statement that returns a single integer (a count, an `exists`).
pub(crate) fn query_int(conn: &Connection, rendered: &Rendered, args: &Args) -> Result<i64> {
    let value = query_opt(conn, rendered, args, crate::row::first_int)?;
    Ok(value.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renderings_are_cached_per_flag_combination_and_name_only_used_params() {
        let status = render(&cairnq_protocol::sqlite::LIST_TASKS, &["status"]);
        assert!(std::ptr::eq(status, render(&cairnq_protocol::sqlite::LIST_TASKS, &["status"])));
        let both = render(&cairnq_protocol::sqlite::LIST_TASKS, &["queue", "status"]);
        assert!(std::ptr::eq(both, render(&cairnq_protocol::sqlite::LIST_TASKS, &["status", "queue"])));
        assert!(!std::ptr::eq(status, both));
        let names: Vec<_> = status.params.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["status", "limit", "offset"]);
        assert!(!status.sql.contains(":queue"));
    }

    #[test]
    fn a_missing_argument_is_an_error_not_a_panic() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        let rendered = render(&cairnq_protocol::sqlite::TABLE_EXISTS, &[]);
        let err = query_int(&conn, rendered, &Args::new()).expect_err("no :table given");
        assert!(err.to_string().contains(":table"), "{err}");
        assert_eq!(query_int(&conn, rendered, &Args::new().text("table", "nope")).expect("bound"), 0);
    }
}
