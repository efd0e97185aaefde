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
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "Writing a backend" (`docs/src/writing-a-backend.md`) is about
//! this crate.

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

/// A statement in its final form for one combination of flags: the SQL
/// with positional placeholders (`?n` for SQLite, `$n` for Postgres) and the
/// parameter name behind each (`params[n - 1]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendering {
    /// The SQL text.
    pub sql: &'static str,
    /// The named parameter each placeholder stands for, in placeholder order.
    pub params: &'static [&'static str],
}

impl Rendering {
    /// The SQL with each placeholder written out as the SQL text given for
    /// its parameter: for scripts printed for people to run (`cairnq
    /// migrate sql`). Statements a backend executes bind their values
    /// instead. A placeholder-like text inside a quoted string is left alone.
    ///
    /// ```
    /// use cairnq_protocol::{Dialect, Sql, sql_string};
    /// let record = Dialect::Postgres.statement(Sql::RecordMigrationInScript).base();
    /// let sql = record.inline(&[("name", &sql_string("0001_init.sql"))]).unwrap();
    /// assert!(sql.contains("values ('0001_init.sql', floor("));
    /// assert!(record.inline(&[]).is_err());
    /// ```
    pub fn inline(&self, values: &[(&str, &str)]) -> Result<String, MissingValue> {
        let mut out = String::with_capacity(self.sql.len());
        let mut rest = self.sql;
        let mut quoted = false;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            let digits = rest.len() - rest.trim_start_matches(|d: char| d.is_ascii_digit()).len();
            if quoted || !matches!(c, '?' | '$') || digits == 0 {
                quoted ^= c == '\'';
                out.push(c);
                continue;
            }
            let position: usize = rest[..digits].parse().unwrap_or(0);
            let param = position.checked_sub(1).and_then(|i| self.params.get(i)).copied().unwrap_or("");
            let value = values.iter().find(|(name, _)| *name == param).ok_or(MissingValue { param })?;
            out.push_str(value.1);
            rest = &rest[digits..];
        }
        Ok(out)
    }
}

/// A parameter [`Rendering::inline`] was given no SQL text for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingValue {
    /// The parameter's name (empty for a placeholder the rendering does not list).
    pub param: &'static str,
}

impl std::fmt::Display for MissingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no SQL text given for parameter {:?}", self.param)
    }
}

impl std::error::Error for MissingValue {}

/// `text` as an SQL string literal, the same in both dialects (`'` doubled;
/// Postgres reads it so with `standard_conforming_strings`, its default).
///
/// ```
/// assert_eq!(cairnq_protocol::sql_string("it's"), "'it''s'");
/// ```
pub fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A named SQL statement, rendered at build time for every combination of
/// the flags its optional (`-- when:`) lines respond to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statement {
    /// The name from the statement's `-- name:` marker.
    pub name: &'static str,
    /// The dialect this text is written in.
    pub dialect: Dialect,
    /// The flags of its optional lines, in order of first use.
    pub flags: &'static [&'static str],
    /// One rendering per flag combination: index bit `i` is `flags[i]`.
    pub renderings: &'static [Rendering],
}

/// A flag the statement has no optional line for (a backend bug, never a
/// caller's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFlag {
    /// The statement asked for.
    pub statement: &'static str,
    /// The flag it does not know.
    pub flag: String,
}

impl std::fmt::Display for UnknownFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "statement {} has no optional line for flag {:?}", self.statement, self.flag)
    }
}

impl std::error::Error for UnknownFlag {}

impl Statement {
    /// The rendering with the optional lines of `flags` switched on (order
    /// and repeats do not matter): an array lookup, no text work.
    ///
    /// ```
    /// let list = cairnq_protocol::postgres::LIST_TASKS;
    /// let rendered = list.rendering(&["status"]).unwrap();
    /// assert!(rendered.sql.contains("status = $1"));
    /// assert_eq!(rendered.params, ["status", "limit", "offset"]);
    /// assert!(list.rendering(&["nope"]).is_err());
    /// ```
    pub fn rendering(&self, flags: &[&str]) -> Result<&'static Rendering, UnknownFlag> {
        let mut mask = 0;
        for flag in flags {
            let bit = self.flags.iter().position(|known| known == flag);
            let bit = bit.ok_or_else(|| UnknownFlag { statement: self.name, flag: (*flag).to_string() })?;
            mask |= 1 << bit;
        }
        self.renderings.get(mask).ok_or_else(|| UnknownFlag { statement: self.name, flag: format!("{flags:?}") })
    }

    /// The statement with every optional line left out.
    pub fn base(&self) -> &'static Rendering {
        &self.renderings[0]
    }
}

/// One schema migration. `file_name` is what the `cairnq_migrations` ledger
/// records, so it is shared with every other cairnq SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// File name including `.sql`, e.g. `0001_init.sql`.
    pub file_name: &'static str,
    /// The number in the file name; migrations of one kind apply in this
    /// order, every shared one before any extension.
    pub ordinal: u32,
    /// Whether every SDK ships it, or only this one.
    pub kind: MigrationKind,
    /// The whole migration script.
    pub sql: &'static str,
}

/// Who ships a migration (PROTOCOL.md, "Extensions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationKind {
    /// `NNNN_<what>.sql`: part of the shared protocol; every cairnq SDK
    /// ships the same script, and its ordinal is a `schema_version`.
    Shared,
    /// `ext_NNNN_<what>.sql`: a table or index of this SDK's own features.
    /// Other SDKs ignore its ledger row; it never touches a shared table's
    /// meaning and never sets `schema_version`.
    Extension,
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

impl Dialect {
    /// This dialect's text of a statement.
    ///
    /// ```
    /// use cairnq_protocol::{Dialect, Sql};
    /// assert_eq!(Dialect::Postgres.statement(Sql::ClaimDueTasks).name, "claim_due_tasks");
    /// ```
    pub const fn statement(self, sql: Sql) -> &'static Statement {
        match self {
            Self::Sqlite => sqlite::statement(sql),
            Self::Postgres => postgres::statement(sql),
        }
    }
}

/// One pending migration as a script printed for people to run applies it
/// (`cairnq migrate sql`), in either dialect: the ledger row first in its
/// transaction (so a migration another process recorded meanwhile fails
/// the insert and applies nothing), then the migration's SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptStep {
    /// The migration's file name, what the ledger records.
    pub file_name: &'static str,
    /// The insert of its ledger row (`record_migration_in_script`, the name
    /// written out), without a closing `;`.
    pub record: String,
    /// The migration's SQL, ending in `;`.
    pub body: String,
}

impl Dialect {
    /// This dialect's migrations `applied` does not name, in the order they
    /// apply, each as a printed script applies it.
    ///
    /// ```
    /// use cairnq_protocol::Dialect;
    /// let steps = Dialect::Sqlite.script_steps(|name| name != "0002_purge_index.sql").unwrap();
    /// assert_eq!(steps.len(), 1);
    /// assert!(steps[0].record.contains("values ('0002_purge_index.sql', "));
    /// assert!(steps[0].body.ends_with(';'));
    /// ```
    pub fn script_steps(self, applied: impl Fn(&str) -> bool) -> Result<Vec<ScriptStep>, MissingValue> {
        let record = self.statement(Sql::RecordMigrationInScript).base();
        let pending = migrations(self).iter().filter(|m| !applied(m.file_name));
        pending
            .map(|migration| {
                let body = migration.sql.trim_end();
                let end = if body.ends_with(';') { "" } else { ";" };
                Ok(ScriptStep {
                    file_name: migration.file_name,
                    record: record.inline(&[("name", &sql_string(migration.file_name))])?,
                    body: format!("{body}{end}"),
                })
            })
            .collect()
    }
}

/// Looks a statement up by name.
pub fn statement(dialect: Dialect, name: &str) -> Option<&'static Statement> {
    statements(dialect).iter().find(|s| s.name == name)
}
