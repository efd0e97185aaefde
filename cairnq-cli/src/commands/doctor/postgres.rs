//! The doctor's look at how a Postgres deployment connects: whether a
//! connection pooler answers instead of Postgres (and whether the command
//! runs in pooler mode to match), how workers hear of new work in this
//! mode, and the server connections cairnq processes hold, by application
//! name (`cairnq-rs <command>`): what a fleet costs the server.

use cairnq_postgres::PostgresStore;
use serde::Serialize;

use crate::db::{PgConnect, Target};
use crate::exit::{Exit, Failure};

#[derive(Serialize)]
pub(super) struct PostgresReport {
    /// `--pooler` / `CAIRNQ_PG_POOLER`.
    pub(super) pooler_mode: bool,
    /// What answers instead of Postgres, when a connection pooler does.
    pub(super) pooler: Option<String>,
    /// How workers and waits hear of new work with these flags.
    pub(super) wakeups: String,
    /// The database's connections from cairnq processes.
    pub(super) connections: Vec<Connections>,
}

#[derive(Serialize)]
pub(super) struct Connections {
    pub(super) application_name: String,
    pub(super) total: u64,
    pub(super) active: u64,
    pub(super) idle: u64,
}

/// Probes first: without pooler mode, every later read through a
/// transaction pooler may fail on a prepared statement another client
/// left, so a pooler that answers then ends the doctor with what to do.
pub(super) async fn check(target: &Target, dsn: &str, connect: &PgConnect) -> Result<PostgresReport, Failure> {
    let options = target.postgres_options();
    let pooler = PostgresStore::pooler_in_front(dsn, options.clone()).await?;
    if let (Some(what), false) = (&pooler, connect.pooler) {
        return Err(Failure::new(
            Exit::Failed,
            format!(
                "{what} answers instead of Postgres, and --pooler is off: through a transaction pooler, \
                 named prepared statements and the session's schema break. Run every cairnq command with \
                 --pooler (CAIRNQ_PG_POOLER=1), and give --listen-url a direct URL for push wakeups"
            ),
        ));
    }
    let wakeups = match (connect.pooler, &connect.listen_url) {
        (_, Some(_)) => "push (LISTEN on --listen-url)".to_string(),
        (true, None) => "polling only: pooler mode without --listen-url (LISTEN cannot go through a \
                         transaction pooler); workers poll every poll interval"
            .to_string(),
        (false, None) => "push (LISTEN on the --db connection)".to_string(),
    };
    let connections = PostgresStore::cairnq_connections(dsn, options)
        .await?
        .into_iter()
        .map(|c| Connections { application_name: c.application_name, total: c.total, active: c.active, idle: c.idle })
        .collect();
    Ok(PostgresReport { pooler_mode: connect.pooler, pooler, wakeups, connections })
}

/// The report's lines for people.
pub(super) fn lines(report: &PostgresReport) -> Vec<String> {
    let mode = if report.pooler_mode { "pooler mode" } else { "direct" };
    let mut lines = vec![
        format!("connection        {mode}; {}", report.pooler.as_deref().unwrap_or("Postgres answers directly")),
        format!("wakeups           {}", report.wakeups),
    ];
    let total: u64 = report.connections.iter().map(|c| c.total).sum();
    let each: Vec<String> = report
        .connections
        .iter()
        .map(|c| format!("{} {} ({} active, {} idle)", c.application_name, c.total, c.active, c.idle))
        .collect();
    lines.push(match each.is_empty() {
        true => "connections       none from cairnq processes".to_string(),
        false => format!("connections       {total} from cairnq processes: {}", each.join("; ")),
    });
    lines
}
