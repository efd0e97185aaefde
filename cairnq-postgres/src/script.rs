//! The migration script for teams whose schema changes go through their
//! own tool (`cairnq migrate sql`): what connecting a store would do to
//! the database, written out as SQL to run as is, for the installation as
//! it is now (only the migrations its ledger lacks).
//!
//! It does what [`migrate::install`](crate::migrate) does, in the same
//! order: with a schema, the search_path every pooled connection gets;
//! when there is no ledger, one transaction under the installation lock
//! that creates the schema and the ledger; then each pending migration in
//! its own transaction that first takes `lock table cairnq_migrations in
//! exclusive mode`, with its ledger row; and `ANALYZE` once for a database
//! that had no tables yet. The ledger row comes first in its transaction:
//! a migration recorded meanwhile fails the insert, which aborts the
//! transaction, so nothing is applied twice. Refused as a connect would
//! be: another protocol version, or a second installation beside one the
//! search_path does not reach.

use std::fmt::Write as _;

use cairnq_core::{Error, Result};
use cairnq_protocol::{Dialect, postgres};
use cairnq_sql::{Installed, Sql, check_protocol_version};

use crate::inspect::{connect_once, ledger_entries, meta};
use crate::migrate::{LOCK_INSTALL, LOCK_LEDGER, refuse_second_installation, table_exists};
use crate::options::{PostgresOptions, quote_ident};

/// What the script depends on, read from the database.
struct Found<'a> {
    schema: Option<&'a str>,
    ledger: Option<Vec<(String, i64)>>,
    tasks_table: bool,
}

/// The script for the database at `dsn` (see [`PostgresStore::migration_script`](crate::PostgresStore::migration_script)).
pub(crate) async fn migration_script(dsn: &str, options: &PostgresOptions) -> Result<String> {
    let client = connect_once(dsn, options).await?;
    if options.schema.is_none() {
        refuse_second_installation(&client).await?;
    }
    let meta = meta(&client).await?;
    check_protocol_version(meta.get("protocol_version").map(String::as_str), Installed::NotYet)?;
    let found = Found {
        schema: options.schema.as_deref(),
        ledger: ledger_entries(&client).await?,
        tasks_table: table_exists(&client, "cairnq_tasks").await?,
    };
    render(&found)
}

fn render(found: &Found<'_>) -> Result<String> {
    let applied = |file_name: &str| found.ledger.iter().flatten().any(|(name, _)| name == file_name);
    let pending = Dialect::Postgres.script_steps(applied).map_err(|e| Error::storage("render the ledger rows", e))?;
    if pending.is_empty() {
        return Ok("-- cairnq: no pending migration; the database is up to date.\n".to_string());
    }
    let place = found.schema.map_or_else(
        || "the first schema of the search_path of the connection that runs it".to_string(),
        |schema| format!("schema {}", quote_ident(schema)),
    );
    let mut script = format!(
        "-- cairnq: {} pending migration(s) for Postgres, in {place}, in order, as connecting would apply\n\
         -- them: each in one transaction with its row in the ledger (cairnq_migrations), recorded first,\n\
         -- so a migration applied meanwhile fails its insert instead of applying twice. Run the script\n\
         -- as is and stop at the first error, e.g. `psql -v ON_ERROR_STOP=1 -f cairnq.sql DSN`.\n",
        pending.len()
    );
    if let Some(schema) = found.schema {
        writeln!(script, "set search_path to {};", quote_ident(schema)).ok();
    }
    if found.ledger.is_none() {
        script.push_str(&install_block(found.schema));
    }
    for step in &pending {
        let (name, record, body) = (step.file_name, &step.record, &step.body);
        writeln!(script, "\n-- migration: {name}\nbegin;\n{LOCK_LEDGER};\n{record};\n{body}\ncommit;").ok();
    }
    if !found.tasks_table {
        // A new database gets its planner statistics once, as a connect gives them.
        writeln!(script, "\n{};", postgres::statement(Sql::AnalyzeTasks).base().sql).ok();
    }
    Ok(script)
}

/// The schema (when one is given) and the ledger, under the lock every
/// installing connect takes.
fn install_block(schema: Option<&str>) -> String {
    let create_schema =
        schema.map(|schema| format!("create schema if not exists {};\n", quote_ident(schema))).unwrap_or_default();
    let ledger = postgres::statement(Sql::CreateMigrationLedger).base().sql;
    format!("\nbegin;\n{LOCK_INSTALL};\n{create_schema}{ledger};\ncommit;\n")
}

#[cfg(test)]
mod tests {
    use cairnq_protocol::MigrationKind;

    use super::*;

    #[test]
    fn a_schema_is_created_and_searched_and_only_what_the_ledger_lacks_is_printed() {
        let fresh = render(&Found { schema: Some("jobs"), ledger: None, tasks_table: false }).expect("render");
        assert!(fresh.contains("set search_path to \"jobs\";\n"), "{fresh}");
        assert!(fresh.contains("create schema if not exists \"jobs\";"), "{fresh}");
        assert!(fresh.contains("create table if not exists cairnq_migrations") && fresh.contains("analyze"));
        assert_eq!(fresh.matches(LOCK_LEDGER).count(), postgres::MIGRATIONS.len());

        let shared: Vec<_> = postgres::MIGRATIONS
            .iter()
            .filter(|m| m.kind == MigrationKind::Shared)
            .map(|m| (m.file_name.into(), 1))
            .collect();
        let partly = render(&Found { schema: None, ledger: Some(shared), tasks_table: true }).expect("render");
        assert!(!partly.contains("search_path to") && !partly.contains("cairnq:install"), "{partly}");
        assert!(!partly.contains("-- migration: 0003_notify.sql") && partly.contains("-- migration: ext_0001"));
        assert!(partly.contains("values ('ext_0001_schedules.sql', floor("), "{partly}");
    }
}
