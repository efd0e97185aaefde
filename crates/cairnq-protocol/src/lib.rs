//! The canonical cairnq SQL, per dialect, embedded at build time.
//!
//! This crate exists so that SQL is source, not strings scattered through
//! backends: every statement and migration of the storage protocol lives in
//! `sql/<dialect>/*.sql` and `migrations/<dialect>/*.sql`, and `build.rs`
//! turns them into typed constants ([`sqlite::STATEMENTS`],
//! [`sqlite::MIGRATIONS`], one module per dialect). The build fails when the
//! dialects disagree on the statement or migration set.
//!
//! Internal to cairnq: backends use it, applications should not. It does no
//! I/O and has no dependencies.
//!
//! ```
//! use cairnq_protocol::{sqlite, Dialect};
//!
//! let first = &sqlite::MIGRATIONS[0];
//! assert_eq!(first.file_name, "0001_init.sql");
//! assert_eq!(first.ordinal, 1);
//! assert!(sqlite::STATEMENTS.iter().all(|s| s.dialect == Dialect::Sqlite));
//! ```

include!(concat!(env!("OUT_DIR"), "/generated.rs"));

/// The protocol version every dialect's `cairnq_meta` row must hold.
pub const PROTOCOL_VERSION: u32 = 1;

/// The schema version reached after the newest migration.
pub const SCHEMA_VERSION: u32 = 10;

/// The SQL dialect a statement or migration is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// SQLite 3 (bundled through rusqlite).
    Sqlite,
    /// PostgreSQL 13 or newer.
    Postgres,
}

/// One line of a statement. A line with `when` is rendered only when the
/// caller turns that flag on (e.g. a filter the caller actually gave).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// The flag that must be on for this line to be part of the SQL.
    pub when: Option<&'static str>,
    /// The SQL text of the line, without its `-- when:` marker.
    pub text: &'static str,
    /// The named parameters (`:name`) used on this line, in order of first use.
    pub params: &'static [&'static str],
}

/// A named SQL statement with `:name` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statement {
    /// The name from the statement's `-- name:` marker.
    pub name: &'static str,
    /// The dialect this text is written in.
    pub dialect: Dialect,
    /// The statement with every optional line left out.
    pub sql: &'static str,
    /// Every named parameter any line uses, in order of first use.
    pub params: &'static [&'static str],
    /// The statement line by line, optional lines included.
    pub lines: &'static [Line],
}

impl Statement {
    /// Renders the statement with the optional lines whose flag `enabled`
    /// accepts, returning the SQL and the parameters it uses (in order of
    /// first use).
    ///
    /// ```
    /// let list = cairnq_protocol::sqlite::LIST_TASKS;
    /// let (sql, params) = list.render(|flag| flag == "status");
    /// assert!(sql.contains(":status"));
    /// assert!(!sql.contains(":queue"));
    /// assert!(params.contains(&"status"));
    /// ```
    pub fn render(&self, enabled: impl Fn(&str) -> bool) -> (String, Vec<&'static str>) {
        let mut sql = String::new();
        let mut params: Vec<&'static str> = Vec::new();
        for line in self.lines {
            if line.when.is_some_and(|flag| !enabled(flag)) {
                continue;
            }
            if !sql.is_empty() {
                sql.push('\n');
            }
            sql.push_str(line.text);
            for p in line.params {
                if !params.contains(p) {
                    params.push(p);
                }
            }
        }
        (sql, params)
    }

    /// The flags this statement's optional lines respond to.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags: Vec<&'static str> = Vec::new();
        for flag in self.lines.iter().filter_map(|l| l.when) {
            if !flags.contains(&flag) {
                flags.push(flag);
            }
        }
        flags
    }
}

/// One schema migration. `file_name` is what the `cairnq_migrations` ledger
/// records, so it is shared with every other cairnq SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// File name including `.sql`, e.g. `0001_init.sql`.
    pub file_name: &'static str,
    /// The leading number of the file name; migrations apply in this order.
    pub ordinal: u32,
    /// The whole migration script.
    pub sql: &'static str,
}

/// The statements of a dialect.
pub fn statements(dialect: Dialect) -> &'static [Statement] {
    match dialect {
        Dialect::Sqlite => sqlite::STATEMENTS,
        Dialect::Postgres => postgres::STATEMENTS,
    }
}

/// The migrations of a dialect, in the order they apply.
pub fn migrations(dialect: Dialect) -> &'static [Migration] {
    match dialect {
        Dialect::Sqlite => sqlite::MIGRATIONS,
        Dialect::Postgres => postgres::MIGRATIONS,
    }
}

/// Looks a statement up by name.
pub fn statement(dialect: Dialect, name: &str) -> Option<&'static Statement> {
    statements(dialect).iter().find(|s| s.name == name)
}
