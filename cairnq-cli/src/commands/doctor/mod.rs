//! `cairnq doctor`: what an operator checks first when a queue misbehaves,
//! in one read-only pass: the protocol version the database holds beside
//! this SDK's, the schema version (the last shared migration applied) and
//! the extensions, the whole migration ledger, Postgres installations (more
//! than one splits a queue), SQLite integrity and WAL size, expired leases
//! (a worker died), the task due longest ago, task names that seem to
//! have no worker, and the flow-control limits with keys running over
//! theirs. Exit 1 when it found a problem.
//!
//! A database of another protocol version is reported, not refused: its
//! versions and ledger are still read, only its tasks are not (no store of
//! this SDK opens it).

mod counts;
mod limits;
mod postgres;
mod render;
mod sqlite;
mod tasks;

use std::collections::BTreeMap;

use cairnq_core::MigrationStatus;
use cairnq_postgres::PostgresStore;
use cairnq_protocol::PROTOCOL_VERSION;
use serde::Serialize;

use crate::commands::Context;
use crate::db::Target;
use crate::exit::{Exit, Failure};
use crate::output::Format;

#[derive(Serialize)]
struct Report {
    backend: &'static str,
    protocol_version: ProtocolVersion,
    schema_version: SchemaVersion,
    /// The extension migrations applied (this SDK's `ext_*`, or another's).
    extensions: Vec<String>,
    /// Every migration the ledger records, in name order.
    ledger: Vec<LedgerEntry>,
    migrations_pending: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    postgres_installations: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    postgres: Option<postgres::PostgresReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sqlite: Option<sqlite::SqliteReport>,
    /// Absent when the tasks were not read (another protocol version, a
    /// damaged file).
    #[serde(flatten)]
    tasks: Option<tasks::Findings>,
    /// Absent where the tasks were not read, or the database has no limits
    /// table (no extension ext_0006: nothing is limited).
    #[serde(flatten)]
    limits: Option<limits::LimitFindings>,
    problems: Vec<String>,
}

/// The protocol version in `cairnq_meta`, beside the one this SDK speaks.
#[derive(Serialize)]
struct ProtocolVersion {
    database: Option<String>,
    sdk: String,
}

#[derive(Serialize)]
struct SchemaVersion {
    /// The last shared migration the ledger records (extensions aside).
    last_shared_migration: Option<String>,
    /// `schema_version` in `cairnq_meta`, as stored.
    database: Option<String>,
}

#[derive(Serialize)]
struct LedgerEntry {
    name: String,
    applied_at_ms: i64,
}

pub(crate) async fn run(context: &Context) -> Result<Exit, Failure> {
    let target = context.target()?;
    let mut problems = Vec::new();
    let (postgres_installations, postgres, sqlite) = backend_checks(&target, &mut problems).await?;
    let damaged = sqlite.as_ref().is_some_and(sqlite::SqliteReport::damaged);
    let meta = as_far_as_it_reads(damaged, target.meta().await, "its meta rows", &mut problems)?;
    let ledger = as_far_as_it_reads(damaged, target.migrations().await, "its migration ledger", &mut problems)?;
    let protocol_version =
        ProtocolVersion { database: meta.get("protocol_version").cloned(), sdk: PROTOCOL_VERSION.to_string() };
    // Another protocol's database is reported; anything else a store cannot
    // open (no file, not a cairnq database) is refused as every command does.
    let readable = match &protocol_version.database {
        Some(found) if found.trim() != protocol_version.sdk => {
            problems.push(format!(
                "the database holds protocol version {found}, this SDK speaks {}: no store of this SDK opens it \
                 (its tasks were not checked)",
                protocol_version.sdk
            ));
            false
        }
        _ => true,
    };
    let client = match readable && !damaged {
        true => Some(context.existing().await?),
        false => None,
    };
    let migrations_pending: Vec<String> = ledger.iter().filter(|m| !m.is_applied()).map(|m| m.name.clone()).collect();
    if !migrations_pending.is_empty() {
        problems.push(format!("{} migration(s) pending: run `cairnq migrate`", migrations_pending.len()));
    }
    let (tasks, running) = match &client {
        Some(client) => {
            let (findings, running) = tasks::check(client, &target, &mut problems).await?;
            (Some(findings), running)
        }
        None => (None, Vec::new()),
    };
    let limited = ledger.iter().any(|m| m.is_applied() && m.name.starts_with(LIMITS_EXTENSION));
    let limits = match &client {
        Some(client) if limited => Some(limits::check(client, &running, &mut problems).await?),
        _ => None,
    };
    let report = Report {
        backend: target.backend(),
        protocol_version,
        schema_version: schema_version(&ledger, &meta),
        extensions: ledger.iter().filter(|m| m.is_applied() && !m.is_shared()).map(|m| m.name.clone()).collect(),
        ledger: ledger
            .iter()
            .filter_map(|m| m.applied_at_ms.map(|at| LedgerEntry { name: m.name.clone(), applied_at_ms: at }))
            .collect(),
        migrations_pending,
        postgres_installations,
        postgres,
        sqlite,
        tasks,
        limits,
        problems,
    };
    match context.out.format {
        Format::Table => context.out.text(&render::report(&report))?,
        _ => context.out.json(&report)?,
    }
    Ok(if report.problems.is_empty() { Exit::Ok } else { Exit::Failed })
}

/// The extension migration that creates the limits table: a database
/// without it has no limits to report.
const LIMITS_EXTENSION: &str = "ext_0006_";

fn schema_version(ledger: &[MigrationStatus], meta: &BTreeMap<String, String>) -> SchemaVersion {
    SchemaVersion {
        last_shared_migration: ledger
            .iter()
            .filter(|m| m.is_applied() && m.is_shared())
            .map(|m| m.name.clone())
            .next_back(),
        database: meta.get("schema_version").cloned(),
    }
}

/// A read of a damaged file that failed: one more finding, not the end of
/// the report.
fn as_far_as_it_reads<T: Default>(
    damaged: bool,
    read: Result<T, Failure>,
    what: &str,
    problems: &mut Vec<String>,
) -> Result<T, Failure> {
    match read {
        Err(failure) if damaged => {
            problems.push(format!("{what} cannot be read: {}", failure.message));
            Ok(T::default())
        }
        read => read,
    }
}

/// What the doctor found per backend: the Postgres installations and
/// deployment, or the SQLite file.
type BackendChecks = (Option<Vec<String>>, Option<postgres::PostgresReport>, Option<sqlite::SqliteReport>);

async fn backend_checks(target: &Target, problems: &mut Vec<String>) -> Result<BackendChecks, Failure> {
    match target {
        Target::Sqlite(path) => Ok((None, None, Some(sqlite::check(path, problems).await?))),
        Target::Postgres { dsn, connect, .. } => {
            let report = postgres::check(target, dsn, connect).await?;
            let schemas = PostgresStore::installations(dsn, target.postgres_options()).await?;
            if schemas.len() > 1 {
                problems.push(format!(
                    "cairnq is installed in {} schemas ({}): processes on different ones never see each other's tasks",
                    schemas.len(),
                    render::few(&schemas)
                ));
            }
            Ok((Some(schemas), Some(report), None))
        }
    }
}
