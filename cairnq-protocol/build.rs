//! Turns the `.sql` sources of this crate into typed Rust constants.
//!
//! Statements live in `sql/<dialect>/*.sql`, each introduced by a
//! `-- name: <statement_name>` line. A line that ends in `-- when: <flag>` is
//! optional: it is part of the statement only when the flag is on, which is
//! how one statement specializes itself to the filters a caller actually
//! gave. Every flag combination is rendered here, once, in the dialect's
//! final form (`:name` parameters become `?n` for SQLite and `$n` for
//! Postgres, numbered in order of first use), so backends only pick a
//! rendering and bind values in the order it lists.
//! Migrations live in `migrations/<dialect>/NNNN_<what>.sql` (shared with
//! every cairnq SDK) and `migrations/<dialect>/ext_NNNN_<what>.sql` (this
//! SDK's extensions, PROTOCOL.md "Extensions": a prefix no shared migration
//! can ever take, numbered in their own sequence, applied after the shared
//! ones because `e` sorts after every digit).
//!
//! The build fails when the dialects disagree on the statement or migration
//! set (except the allow-listed Postgres-only migration), so a statement can
//! never ship for one backend and be forgotten in the other.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Dialect directories this crate knows, with the Rust enum variant of each.
const DIALECTS: &[(&str, &str)] = &[("sqlite", "Sqlite"), ("postgres", "Postgres")];

/// Migrations that exist in one dialect only, on purpose: Postgres's
/// notifications; the removal of the dependency edges' foreign keys
/// (Postgres checks them per row; SQLite's edge insert is already within
/// its flow target, and its trigger works the same with them); SQLite's
/// task-count triggers as upserts (Postgres counts through delta rows);
/// the queued index rebuilt newest first (SQLite leaves no entry of a
/// claimed row behind for a walk to pass).
const DIALECT_ONLY_MIGRATIONS: &[(&str, &str)] = &[
    ("postgres", "0003_notify.sql"),
    ("postgres", "ext_0011_dependency_edges_unchecked.sql"),
    ("sqlite", "ext_0012_task_counts_upsert.sql"),
    ("postgres", "ext_0013_limit_queue_newest_first.sql"),
];

/// A piece of one SQL line: text as written, or a named parameter.
enum Piece {
    Text(String),
    Param(String),
}

struct Line {
    when: Option<String>,
    pieces: Vec<Piece>,
}

struct Statement {
    name: String,
    lines: Vec<Line>,
}

struct Migration {
    file_name: String,
    ordinal: u32,
    extension: bool,
    sql: String,
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=sql");
    println!("cargo:rerun-if-changed=migrations");

    let mut out = String::new();
    let mut statement_sets: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut migration_sets: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for &(dialect, variant) in DIALECTS {
        let sql_dir = root.join("sql").join(dialect);
        let migrations_dir = root.join("migrations").join(dialect);
        let statements = if sql_dir.is_dir() {
            let statements = read_statements(&sql_dir);
            statement_sets.insert(dialect, statements.iter().map(|s| s.name.clone()).collect());
            statements
        } else {
            Vec::new()
        };
        let migrations = read_migrations(&migrations_dir);
        migration_sets.insert(
            dialect,
            migrations
                .iter()
                .map(|m| m.file_name.clone())
                .filter(|name| !DIALECT_ONLY_MIGRATIONS.contains(&(dialect, name.as_str())))
                .collect(),
        );
        emit_dialect(&mut out, dialect, variant, &statements, &migrations);
    }
    check_same_sets("statement", &statement_sets);
    check_same_sets("migration", &migration_sets);
    if let Some(names) = statement_sets.values().next() {
        emit_names(&mut out, names);
    }

    let out_path = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("generated.rs");
    fs::write(out_path, out).expect("write generated.rs");
}

fn sorted_sql_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("read dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
}

fn read_statements(dir: &Path) -> Vec<Statement> {
    let mut statements: Vec<Statement> = Vec::new();
    for file in sorted_sql_files(dir) {
        let text = fs::read_to_string(&file).expect("read statement file");
        let mut current: Option<Statement> = None;
        for (line_no, raw) in text.lines().enumerate() {
            let trimmed = raw.trim();
            if let Some(name) = trimmed.strip_prefix("-- name:") {
                statements.extend(current.take());
                let name = name.trim().to_string();
                assert!(is_identifier(&name), "{}:{}: bad statement name {name:?}", file.display(), line_no + 1);
                current = Some(Statement { name, lines: Vec::new() });
                continue;
            }
            if trimmed.is_empty() || trimmed.starts_with("--") {
                continue;
            }
            let Some(statement) = current.as_mut() else {
                panic!("{}:{}: SQL before the first `-- name:` line", file.display(), line_no + 1);
            };
            statement.lines.push(parse_line(raw));
        }
        statements.extend(current.take());
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in &statements {
        assert!(seen.insert(s.name.clone()), "statement {} defined twice in {}", s.name, dir.display());
        assert!(!s.lines.is_empty(), "statement {} has no SQL", s.name);
    }
    statements.sort_by(|a, b| a.name.cmp(&b.name));
    statements
}

/// Splits one SQL line into its code (text pieces and named parameters)
/// and its optional `-- when: flag` marker. Text inside string literals and
/// after `--` is never a parameter; `::type` is a Postgres cast, not one.
fn parse_line(raw: &str) -> Line {
    let chars: Vec<char> = raw.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut in_string = false;
    let mut code_end = chars.len();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            in_string = c != '\'';
        } else if c == '\'' {
            in_string = true;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            code_end = i;
            break;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            text.push_str("::");
            i += 2;
            continue;
        } else if c == ':' && chars.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') {
            let start = i + 1;
            let mut end = start;
            while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            pieces.push(Piece::Text(std::mem::take(&mut text)));
            pieces.push(Piece::Param(chars[start..end].iter().collect()));
            i = end;
            continue;
        }
        text.push(c);
        i += 1;
    }
    pieces.push(Piece::Text(text.trim_end().to_string()));
    let comment: String = chars[code_end..].iter().collect();
    let when = comment.trim_start_matches('-').trim().strip_prefix("when:").map(|flag| flag.trim().to_string());
    if let Some(flag) = &when {
        assert!(is_identifier(flag), "bad `when` flag {flag:?} in line {raw:?}");
    }
    Line { when, pieces }
}

/// The flags a statement's optional lines respond to, in order of first use.
fn flags_of(statement: &Statement) -> Vec<&str> {
    let mut flags: Vec<&str> = Vec::new();
    for flag in statement.lines.iter().filter_map(|l| l.when.as_deref()) {
        if !flags.contains(&flag) {
            flags.push(flag);
        }
    }
    assert!(flags.len() <= 8, "statement {} has more than 8 flags: {flags:?}", statement.name);
    flags
}

/// The statement with the lines of the flags in `mask` switched on, in
/// `dialect`'s placeholder style, and its parameters in placeholder order.
fn render(statement: &Statement, flags: &[&str], mask: usize, dialect: &str) -> (String, Vec<String>) {
    let mut sql = String::new();
    let mut params: Vec<String> = Vec::new();
    let enabled = |flag: &str| flags.iter().position(|f| *f == flag).is_some_and(|bit| mask & (1 << bit) != 0);
    for line in statement.lines.iter().filter(|l| l.when.as_deref().is_none_or(enabled)) {
        if !sql.is_empty() {
            sql.push('\n');
        }
        for piece in &line.pieces {
            match piece {
                Piece::Text(text) => sql.push_str(text),
                Piece::Param(name) => {
                    let number = match params.iter().position(|p| p == name) {
                        Some(at) => at + 1,
                        None => {
                            params.push(name.clone());
                            params.len()
                        }
                    };
                    let sigil = if dialect == "postgres" { '$' } else { '?' };
                    let _ = write!(sql, "{sigil}{number}");
                }
            }
        }
    }
    (sql, params)
}

fn read_migrations(dir: &Path) -> Vec<Migration> {
    let mut migrations = Vec::new();
    for file in sorted_sql_files(dir) {
        let file_name = file.file_name().expect("file name").to_string_lossy().into_owned();
        let (extension, numbered) = match file_name.strip_prefix("ext_") {
            Some(rest) => (true, rest),
            None => (false, file_name.as_str()),
        };
        let ordinal: u32 = numbered
            .split('_')
            .next()
            .and_then(|n| if n.len() == 4 { n.parse().ok() } else { None })
            .unwrap_or_else(|| {
                panic!(
                    "migration {file_name} must start with a 4-digit ordinal (after `ext_` for an extension) and `_`"
                )
            });
        let sql = fs::read_to_string(&file).expect("read migration");
        migrations.push(Migration { file_name, ordinal, extension, sql });
    }
    // Sorted by file name: every shared migration, then every extension.
    for pair in migrations.windows(2) {
        assert!(
            pair[0].extension != pair[1].extension || pair[0].ordinal < pair[1].ordinal,
            "two migrations share ordinal {} in {}",
            pair[1].ordinal,
            dir.display()
        );
    }
    migrations
}

fn check_same_sets(what: &str, sets: &BTreeMap<&str, Vec<String>>) {
    let mut iter = sets.iter();
    let Some((first_dialect, first)) = iter.next() else { return };
    for (dialect, set) in iter {
        let only_first: Vec<_> = first.iter().filter(|n| !set.contains(n)).collect();
        let only_other: Vec<_> = set.iter().filter(|n| !first.contains(n)).collect();
        assert!(
            only_first.is_empty() && only_other.is_empty(),
            "the dialects disagree on the {what} set: only in {first_dialect}: {only_first:?}; only in {dialect}: {only_other:?}"
        );
    }
}

/// `claim_due_tasks` -> `ClaimDueTasks`.
fn camel(name: &str) -> String {
    name.split('_').map(|part| part[..1].to_uppercase() + &part[1..]).collect()
}

/// The dialect-neutral names of the statements every dialect has.
fn emit_names(out: &mut String, names: &[String]) {
    out.push_str("/// Every protocol statement by name; each dialect module maps it to its own\n");
    out.push_str("/// text (`sqlite::statement`, `postgres::statement`), so code written once\n");
    out.push_str("/// above the dialects names statements without naming a dialect.\n");
    out.push_str("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub enum Sql {\n");
    for name in names {
        let _ = writeln!(out, "    /// `{name}`.\n    {},", camel(name));
    }
    out.push_str("}\n\nimpl Sql {\n    /// The statement's `-- name:`.\n    pub const fn name(self) -> &'static str {\n        match self {\n");
    for name in names {
        let _ = writeln!(out, "            Self::{} => {name:?},", camel(name));
    }
    out.push_str("        }\n    }\n}\n");
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn emit_dialect(out: &mut String, dialect: &str, variant: &str, statements: &[Statement], migrations: &[Migration]) {
    let w = |out: &mut String, s: String| out.push_str(&s);
    w(out, format!("/// The `{dialect}` dialect: its statements and migrations.\npub mod {dialect} {{\n"));
    for s in statements {
        let flags = flags_of(s);
        let mut renderings = String::new();
        for mask in 0..(1usize << flags.len()) {
            let (sql, params) = render(s, &flags, mask, dialect);
            let _ = writeln!(renderings, "            crate::Rendering {{ sql: {sql:?}, params: &{params:?} }},");
        }
        w(out, format!("    /// The `{}` statement.\n", s.name));
        w(
            out,
            format!(
                "    pub const {}: crate::Statement = crate::Statement {{\n        name: {:?},\n        dialect: crate::Dialect::{variant},\n        flags: &{flags:?},\n        renderings: &[\n{renderings}        ],\n    }};\n\n",
                s.name.to_uppercase(),
                s.name,
            ),
        );
    }
    let names: Vec<String> = statements.iter().map(|s| s.name.to_uppercase()).collect();
    w(out, "    /// This dialect's text of a statement.\n    pub const fn statement(sql: crate::Sql) -> &'static crate::Statement {\n        match sql {\n".to_string());
    for s in statements {
        w(out, format!("            crate::Sql::{} => &{},\n", camel(&s.name), s.name.to_uppercase()));
    }
    w(out, "        }\n    }\n\n".to_string());
    w(
        out,
        format!(
            "    /// Every statement of this dialect, sorted by name.\n    pub const STATEMENTS: &[crate::Statement] = &[{}];\n\n",
            names.join(", ")
        ),
    );
    w(out, "    /// Every migration of this dialect, in the order they apply.\n    pub const MIGRATIONS: &[crate::Migration] = &[\n".to_string());
    for m in migrations {
        w(
            out,
            format!(
                "        crate::Migration {{ file_name: {:?}, ordinal: {}, kind: crate::MigrationKind::{}, sql: {:?} }},\n",
                m.file_name,
                m.ordinal,
                if m.extension { "Extension" } else { "Shared" },
                m.sql
            ),
        );
    }
    w(out, "    ];\n}\n\n".to_string());
}
