//! Protocol statements made ready for tokio-postgres.
//!
//! cairnq-protocol writes parameters as `:name` (one spelling for every
//! dialect); Postgres wants `$1..$n`. A statement is rendered for the flags a
//! caller gave, rewritten to positional parameters once per rendering, and
//! that result is cached for the life of the process, so the hot path only
//! looks it up. Arguments are bound by name ([`Args`]), in the order the
//! rewritten statement needs them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cairnq_core::{Error, Result};
use cairnq_protocol::Statement;
use parking_lot::Mutex;
use tokio_postgres::types::ToSql;

/// A statement rewritten to `$n` parameters, with the name behind each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Positional {
    /// The SQL with `$1..$n`.
    pub(crate) sql: String,
    /// `params[i]` is the name bound to `$i+1`.
    pub(crate) params: Vec<String>,
}

type Cache = Mutex<HashMap<(&'static str, u64), Arc<Positional>>>;

static RENDERED: LazyLock<Cache> = LazyLock::new(Cache::default);

/// `statement` rendered with `flags` on, as positional SQL (cached).
pub(crate) fn positional(statement: &'static Statement, flags: &[&str]) -> Arc<Positional> {
    let known = statement.flags();
    let mask = known.iter().enumerate().filter(|(_, f)| flags.contains(f)).fold(0u64, |m, (i, _)| m | (1 << i));
    let key = (statement.name, mask);
    if let Some(hit) = RENDERED.lock().get(&key) {
        return Arc::clone(hit);
    }
    let (sql, _) = statement.render(|flag| flags.contains(&flag));
    let made = Arc::new(to_positional(&sql));
    RENDERED.lock().entry(key).or_insert(made).clone()
}

/// Rewrites every `:name` parameter as `$n` (one number per distinct name,
/// in order of first use). Left alone: `::type` casts, string literals
/// (`'…'`, `E'…'` with backslash escapes), quoted identifiers, dollar-quoted
/// bodies, and `--` / nested `/* */` comments.
pub(crate) fn to_positional(sql: &str) -> Positional {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut params: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\'' => quoted_end(bytes, i, b'\'', starts_escape_string(bytes, i)),
            b'"' => quoted_end(bytes, i, b'"', false),
            b'-' if bytes.get(i + 1) == Some(&b'-') => line_end(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => block_comment_end(bytes, i),
            b'$' => dollar_quote_end(bytes, i).unwrap_or(i + 1),
            b':' if bytes.get(i + 1) == Some(&b':') => i + 2,
            b':' if bytes.get(i + 1).is_some_and(|&b| is_ident_start(b)) => {
                let end = ident_end(bytes, i + 1);
                let name = &sql[i + 1..end];
                let index = params.iter().position(|p| p == name).unwrap_or_else(|| {
                    params.push(name.to_string());
                    params.len() - 1
                });
                out.push_str(&format!("${}", index + 1));
                i = end;
                continue;
            }
            _ => i + 1,
        };
        // Every boundary above sits on an ASCII byte, so slicing is safe.
        out.push_str(&sql[i..end]);
        i = end;
    }
    Positional { sql: out, params }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn ident_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'_')).map_or(bytes.len(), |n| from + n)
}

/// `E'…'` (or `e'…'`) not preceded by another identifier character.
fn starts_escape_string(bytes: &[u8], quote: usize) -> bool {
    quote >= 1
        && matches!(bytes[quote - 1], b'E' | b'e')
        && (quote < 2 || !(bytes[quote - 2].is_ascii_alphanumeric() || bytes[quote - 2] == b'_'))
}

/// The index after the closing `delim` of a literal opened at `open`. A
/// doubled delimiter closes and reopens, which copies through unchanged.
fn quoted_end(bytes: &[u8], open: usize, delim: u8, backslash_escapes: bool) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        if backslash_escapes && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == delim {
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

fn line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| from + n)
}

/// Postgres block comments nest.
fn block_comment_end(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `$tag$ … $tag$` (or `$$ … $$`) opened at `open`; `None` when the `$` does
/// not open one (e.g. it is a positional parameter `$1`).
fn dollar_quote_end(bytes: &[u8], open: usize) -> Option<usize> {
    let tag_end = if bytes.get(open + 1) == Some(&b'$') {
        open + 1
    } else if bytes.get(open + 1).is_some_and(|&b| is_ident_start(b)) {
        let end = ident_end(bytes, open + 1);
        (bytes.get(end) == Some(&b'$')).then_some(end)?
    } else {
        return None;
    };
    let tag = &bytes[open..=tag_end];
    let body = tag_end + 1;
    let close = bytes[body..].windows(tag.len()).position(|w| w == tag);
    Some(close.map_or(bytes.len(), |n| body + n + tag.len()))
}

/// A value bound to a named parameter.
pub(crate) type Arg = Box<dyn ToSql + Sync + Send>;

/// Arguments by parameter name.
#[derive(Default)]
pub(crate) struct Args {
    values: Vec<(&'static str, Arg)>,
}

impl Args {
    /// No arguments.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// With `name` bound to `value`.
    pub(crate) fn set(mut self, name: &'static str, value: impl ToSql + Sync + Send + 'static) -> Self {
        self.values.push((name, Box::new(value)));
        self
    }

    /// The values in the order `statement` needs them.
    pub(crate) fn ordered(&self, statement: &str, names: &[String]) -> Result<Vec<&(dyn ToSql + Sync)>> {
        names
            .iter()
            .map(|name| {
                let found = self.values.iter().find(|(n, _)| n == name);
                found.map(|(_, v)| v.as_ref() as &(dyn ToSql + Sync)).ok_or_else(|| Error::Storage {
                    message: format!("statement {statement} needs :{name}, which was not bound"),
                    source: None,
                    transient: false,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(sql: &str, expected: &str, params: &[&str]) {
        let p = to_positional(sql);
        assert_eq!(p.sql, expected);
        assert_eq!(p.params, params);
    }

    #[test]
    fn numbers_each_name_once_in_order_of_first_use() {
        check("select :a, :b_2, :a", "select $1, $2, $1", &["a", "b_2"]);
    }

    #[test]
    fn leaves_casts_strings_identifiers_and_comments_alone() {
        check("select :x::jsonb, '::y :z', \":w\"", "select $1::jsonb, '::y :z', \":w\"", &["x"]);
        check("select 1 -- :c\n, :d", "select 1 -- :c\n, $1", &["d"]);
        check("select /* :a /* :b */ :c */ :d", "select /* :a /* :b */ :c */ $1", &["d"]);
        check("select 'it''s :no', :yes", "select 'it''s :no', $1", &["yes"]);
        check("select E'\\' :no', :yes", "select E'\\' :no', $1", &["yes"]);
    }

    #[test]
    fn skips_dollar_quoted_bodies_but_not_positional_parameters() {
        check("do $f$ begin :x; end $f$; select :y", "do $f$ begin :x; end $f$; select $1", &["y"]);
        check("select $$:x$$, :y", "select $$:x$$, $1", &["y"]);
        check("select $1 + 1", "select $1 + 1", &[]);
    }

    #[test]
    fn keeps_non_ascii_text_intact() {
        check("select 'é :a', :b -- ü", "select 'é :a', $1 -- ü", &["b"]);
    }

    #[test]
    fn unterminated_constructs_run_to_the_end() {
        check("select ':a", "select ':a", &[]);
        check("select /* :a", "select /* :a", &[]);
    }

    #[test]
    fn caches_one_rendering_per_flag_set() {
        let s = &cairnq_protocol::postgres::LIST_TASKS;
        let a = positional(s, &["queue"]);
        let b = positional(s, &["queue"]);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.params, ["queue", "limit", "offset"]);
        assert!(!positional(s, &[]).sql.contains("queue ="));
    }

    #[test]
    fn reports_an_unbound_parameter() {
        let args = Args::new().set("a", 1i64);
        assert!(args.ordered("s", &["a".to_string()]).is_ok());
        assert!(args.ordered("s", &["b".to_string()]).is_err());
    }
}
