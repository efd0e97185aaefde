//! The command line: global options and one variant per subcommand.
//!
//! Adding a subcommand is one variant here and one module under
//! `commands/` with its `Args` and `run`; nothing else changes.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, Subcommand};

use crate::commands::{self, Context};
use crate::db::PgConnect;
use crate::exit::{EXIT_CODES, Exit, Failure};
use crate::output::{Format, Output};

/// Operate a cairnq queue from the shell, and make any command a worker.
#[derive(Debug, Parser)]
#[command(name = "cairnq", version, after_help = EXIT_CODES, propagate_version = true)]
pub(crate) struct Cli {
    /// The database: a SQLite path (or sqlite:PATH) or a postgres:// URL.
    #[arg(long, env = "CAIRNQ_DB", global = true, value_name = "PATH_OR_URL", hide_env_values = true)]
    db: Option<String>,
    /// The Postgres schema holding the cairnq tables.
    #[arg(long, global = true, value_name = "SCHEMA")]
    schema: Option<String>,
    /// Postgres through a transaction-mode connection pooler (PgBouncer
    /// `pool_mode = transaction`): keep no session state (no named prepared
    /// statements, the schema set per transaction). Without --listen-url
    /// waits and workers poll.
    #[arg(long, global = true, env = "CAIRNQ_PG_POOLER", action = ArgAction::SetTrue,
          value_parser = BoolishValueParser::new())]
    pooler: bool,
    /// A direct Postgres URL (not through the pooler) for LISTEN, so
    /// workers and waits hear of new work at once in --pooler mode.
    #[arg(long, global = true, env = "CAIRNQ_PG_LISTEN_URL", value_name = "URL", hide_env_values = true)]
    listen_url: Option<String>,
    /// Output format: table (people), json (one document), jsonl (one per line).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table, global = true)]
    output: Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a task.
    Submit(commands::submit::Args),
    /// Show one task, by id or --key.
    Get(commands::read::GetArgs),
    /// List tasks, newest first (keyset pages: --after CURSOR).
    List(commands::read::ListArgs),
    /// Cancel a task by id or --key, or every task matching a filter (default: queued and running).
    Cancel(commands::bulk::CancelArgs),
    /// Retry a failed or canceled task by id or --key, or every task matching a filter (default: failed).
    Retry(commands::bulk::RetryArgs),
    /// Delete finished tasks (succeeded, failed, canceled) older than --older-than.
    Purge(commands::purge::Args),
    /// The tree of a flow: every task of ID's root, children under their parent, with status and dependencies.
    Flow(commands::flow::Args),
    /// Wait for a task to finish (exit 0 succeeded, 1 failed or canceled, 4 timeout).
    Wait(commands::wait::Args),
    /// Schedules: ls, add (--cron or --every), pause, resume, trigger, rm.
    Schedule(commands::schedule::Args),
    /// Flow-control limits: set (--concurrency, --rate, --burst), ls, rm.
    Limit(commands::limit::Args),
    /// Task counts per queue and status.
    Stats(commands::stats::Args),
    /// A live view of the queues, running tasks and recent failures (q or Ctrl-C quits).
    Top(commands::top::Args),
    /// Apply migrations; `migrate status` shows the ledger, `migrate sql` what would run.
    Migrate(commands::migrate::Args),
    /// Check the database: versions, ledger, health, stuck and unclaimed tasks.
    Doctor,
    /// Run a command line once per task (payload on stdin, result on stdout).
    Worker(commands::worker::Args),
    /// Serve the dashboard (loopback by default; --token before any other address).
    Web(commands::web::Args),
}

impl Cli {
    /// Runs the chosen command.
    pub(crate) async fn run(self) -> Result<Exit, Failure> {
        let context = Context {
            db: self.db,
            schema: self.schema,
            connect: PgConnect {
                pooler: self.pooler,
                listen_url: self.listen_url,
                application_name: format!("cairnq-rs {}", self.command.name()),
            },
            out: Output::new(self.output),
        };
        match self.command {
            Command::Submit(args) => commands::submit::run(&context, args).await,
            Command::Get(args) => commands::read::get(&context, args).await,
            Command::List(args) => commands::read::list(&context, args).await,
            Command::Cancel(args) => commands::bulk::cancel(&context, args).await,
            Command::Retry(args) => commands::bulk::retry(&context, args).await,
            Command::Purge(args) => commands::purge::run(&context, args).await,
            Command::Flow(args) => commands::flow::run(&context, args).await,
            Command::Wait(args) => commands::wait::run(&context, args).await,
            Command::Schedule(args) => commands::schedule::run(&context, args).await,
            Command::Limit(args) => commands::limit::run(&context, args).await,
            Command::Stats(args) => commands::stats::run(&context, args).await,
            Command::Top(args) => commands::top::run(&context, args).await,
            Command::Migrate(args) => commands::migrate::run(&context, args).await,
            Command::Doctor => commands::doctor::run(&context).await,
            Command::Worker(args) => commands::worker::run(&context, args).await,
            Command::Web(args) => commands::web::run(&context, args).await,
        }
    }
}

impl Command {
    /// The subcommand's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Self::Submit(_) => "submit",
            Self::Get(_) => "get",
            Self::List(_) => "list",
            Self::Cancel(_) => "cancel",
            Self::Retry(_) => "retry",
            Self::Purge(_) => "purge",
            Self::Flow(_) => "flow",
            Self::Wait(_) => "wait",
            Self::Schedule(_) => "schedule",
            Self::Limit(_) => "limit",
            Self::Stats(_) => "stats",
            Self::Top(_) => "top",
            Self::Migrate(_) => "migrate",
            Self::Doctor => "doctor",
            Self::Worker(_) => "worker",
            Self::Web(_) => "web",
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
