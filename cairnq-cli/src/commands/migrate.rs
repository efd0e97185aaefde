//! `cairnq migrate`: apply the migrations this SDK ships (`migrate`), show
//! the ledger (`migrate status`), or print what would run (`migrate sql`)
//! for teams whose schema changes go through their own tool. Status and
//! SQL only read: they create and migrate nothing.

use cairnq_core::{Install, MigrationStatus, now_ms};
use serde::Serialize;

use crate::commands::Context;
use crate::db::Target;
use crate::exit::{Exit, Failure};
use crate::humanize::relative;
use crate::output::{Format, hint};
use crate::table::{Cell, Table, Tone};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// The ledger: each migration applied (and when) or pending. Changes nothing.
    Status,
    /// The SQL opening would run now, as one script to run as is through your own tool: the
    /// ledger if missing, then each pending migration in a transaction with its ledger row
    /// (-o json: {backend, pending: [{name, sql}], script}; -o jsonl: one pending migration
    /// per line). Changes nothing.
    Sql,
}

/// One pending migration in `migrate sql -o json` (its SQL alone).
#[derive(Serialize)]
struct PendingSql<'a> {
    name: &'a str,
    sql: &'a str,
}

/// `migrate sql -o json`: the pending migrations and the whole script.
#[derive(Serialize)]
struct Script<'a> {
    backend: &'static str,
    pending: Vec<PendingSql<'a>>,
    script: &'a str,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    let target = context.target()?;
    match args.action {
        None => {
            let before = target.migrations().await?;
            target.open(Install::Migrate).await?.close().await?;
            let after = target.migrations().await?;
            let applied =
                after.iter().filter(|m| m.is_applied()).count() - before.iter().filter(|m| m.is_applied()).count();
            print_status(context, &after)?;
            hint(&format!("applied {applied} migration(s); the {} database is up to date", target.backend()));
        }
        Some(Action::Status) => {
            let ledger = target.migrations().await?;
            print_status(context, &ledger)?;
            let pending = ledger.iter().filter(|m| !m.is_applied()).count();
            if pending > 0 {
                hint(&format!("{pending} pending: `cairnq migrate` applies them, `cairnq migrate sql` prints them"));
            }
        }
        Some(Action::Sql) => {
            let script = target.migration_script().await?;
            print_sql(context, &target, &target.migrations().await?, &script)?;
        }
    }
    Ok(Exit::Ok)
}

fn print_status(context: &Context, ledger: &[MigrationStatus]) -> Result<(), Failure> {
    if context.out.format != Format::Table {
        return match context.out.format {
            Format::Jsonl => ledger.iter().try_for_each(|m| context.out.json(m)),
            _ => context.out.json(ledger),
        };
    }
    let now = now_ms();
    let mut table = Table::new(vec!["MIGRATION", "STATUS", "APPLIED"]);
    for migration in ledger {
        let (status, when) = match (migration.applied_at_ms, migration.sql) {
            (Some(at), Some(_)) => (Cell::new("applied", Tone::Good), relative(at, now)),
            (Some(at), None) => (Cell::new("applied (unknown to this SDK)", Tone::Busy), relative(at, now)),
            (None, _) => (Cell::new("pending", Tone::Waiting), "-".to_string()),
        };
        table.row(vec![migration.name.clone().into(), status, when.into()]);
    }
    context.out.text(&table.render(context.out.colour))
}

fn print_sql(context: &Context, target: &Target, ledger: &[MigrationStatus], script: &str) -> Result<(), Failure> {
    let pending: Vec<PendingSql<'_>> = ledger
        .iter()
        .filter(|m| !m.is_applied())
        .filter_map(|m| m.sql.map(|sql| PendingSql { name: &m.name, sql }))
        .collect();
    match context.out.format {
        Format::Json => context.out.json(&Script { backend: target.backend(), pending, script }),
        Format::Jsonl => pending.iter().try_for_each(|p| context.out.json(p)),
        Format::Table => context.out.text(script),
    }
}
