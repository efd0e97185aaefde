//! How opening a store treats the database's installation (the cairnq
//! tables and the migration ledger), and what the ledger says.
//!
//! Applications want a database created and migrated on open; tools that
//! only look at a queue (the `cairnq` command's `get`, `list`, `stats`, ...)
//! must never create a file from a typo or migrate a database behind its
//! operator's back. Both backends take an [`Install`] in their options, and
//! report their ledger as [`MigrationStatus`] rows, so a tool treats both
//! backends alike.

use serde::Serialize;

/// How a store's open treats the database's installation.
///
/// ```
/// use cairnq_core::Install;
/// assert_eq!(Install::default(), Install::Migrate);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Install {
    /// Create what is missing (the SQLite file, the Postgres schema) and
    /// apply every missing migration: what an application wants.
    #[default]
    Migrate,
    /// Use the database as it is: refuse, with
    /// [`Error::Unusable`](crate::Error::Unusable) naming the cause, a
    /// database that does not exist or holds no cairnq installation; apply
    /// no migration and write nothing while opening. Pending migrations are
    /// not refused (a newer SDK's database still reads); list them with the
    /// backend's migration status.
    Existing,
}

/// One migration, as this SDK and the database's ledger know it.
///
/// ```
/// use cairnq_core::MigrationStatus;
/// let pending = MigrationStatus::pending("0001_init.sql", "create table ...");
/// assert!(!pending.is_applied());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MigrationStatus {
    /// The migration's file name, as the ledger records it.
    pub name: String,
    /// When the ledger says it was applied; `None`: pending.
    pub applied_at_ms: Option<i64>,
    /// This SDK's SQL text for it; `None` for a migration the ledger holds
    /// that this SDK does not ship (applied by a newer SDK).
    #[serde(skip)]
    pub sql: Option<&'static str>,
}

impl MigrationStatus {
    /// A migration this SDK ships that the ledger does not hold yet.
    pub fn pending(name: impl Into<String>, sql: &'static str) -> Self {
        Self { name: name.into(), applied_at_ms: None, sql: Some(sql) }
    }

    /// A migration the ledger records as applied at `applied_at_ms`, with
    /// this SDK's text for it when it ships one.
    pub fn applied(name: impl Into<String>, applied_at_ms: i64, sql: Option<&'static str>) -> Self {
        Self { name: name.into(), applied_at_ms: Some(applied_at_ms), sql }
    }

    /// Whether the ledger records it.
    pub fn is_applied(&self) -> bool {
        self.applied_at_ms.is_some()
    }

    /// Whether this is a migration of the shared protocol, which every SDK
    /// ships under the same name (`NNNN_what.sql`), rather than an
    /// extension of one SDK's own (PROTOCOL.md "Extensions": any other
    /// name, such as this SDK's `ext_NNNN_what.sql`). Only shared ones
    /// make up the schema version.
    ///
    /// ```
    /// use cairnq_core::MigrationStatus;
    /// assert!(MigrationStatus::applied("0010_drop_status_index.sql", 1, None).is_shared());
    /// assert!(!MigrationStatus::applied("ext_0001_schedules.sql", 1, None).is_shared());
    /// ```
    pub fn is_shared(&self) -> bool {
        let bytes = self.name.as_bytes();
        bytes.len() > 4 && bytes[..4].iter().all(u8::is_ascii_digit) && bytes[4] == b'_'
    }

    /// The ledger (`name`, `applied_at_ms`) merged with the migrations this
    /// SDK ships (`name`, SQL), in file-name order: what a backend's
    /// migration status returns.
    pub fn merge(ledger: Vec<(String, i64)>, shipped: &[(&'static str, &'static str)]) -> Vec<Self> {
        let mut all: Vec<Self> = shipped
            .iter()
            .map(|(name, sql)| match ledger.iter().find(|(applied, _)| applied == name) {
                Some((_, at)) => Self::applied(*name, *at, Some(sql)),
                None => Self::pending(*name, sql),
            })
            .collect();
        for (name, at) in ledger {
            if !shipped.iter().any(|(known, _)| *known == name) {
                all.push(Self::applied(name, at, None));
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_marks_pending_and_keeps_foreign_entries() {
        let ledger = vec![("0001_a.sql".to_string(), 5), ("0099_newer.sql".to_string(), 9)];
        let merged = MigrationStatus::merge(ledger, &[("0001_a.sql", "a"), ("0002_b.sql", "b")]);
        let names: Vec<_> = merged.iter().map(|m| (m.name.as_str(), m.applied_at_ms, m.sql)).collect();
        assert_eq!(
            names,
            [("0001_a.sql", Some(5), Some("a")), ("0002_b.sql", None, Some("b")), ("0099_newer.sql", Some(9), None)]
        );
    }
}
