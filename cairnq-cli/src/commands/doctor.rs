//! `cairnq doctor`: what an operator checks first when a queue misbehaves,
//! in one read-only pass: protocol and schema versions, the migration
//! ledger, Postgres installations (more than one splits a queue), SQLite
//! integrity and WAL size, expired leases (a worker died), the oldest
//! queued task, and task names that seem to have no worker. Exit 1 when
//! it found a problem.

use std::collections::BTreeMap;

use cairnq_core::{CairnQ, ListFilter, PROTOCOL_VERSION, TaskStatus};
use cairnq_postgres::PostgresStore;
use cairnq_sqlite::SqliteStore;
use serde::Serialize;

use crate::commands::Context;
use crate::db::Target;
use crate::exit::{Exit, Failure};
use crate::humanize::{now_ms, short};
use crate::output::Format;

/// Rows read per page when scanning running and queued tasks.
const PAGE: u32 = 1000;
/// The most rows a scan reads: a doctor must not become a load test.
const SCAN_CAP: usize = 100_000;
/// A due task waiting longer than this, whose name nothing has run
/// recently, looks unclaimed.
const UNCLAIMED_AFTER_MS: i64 = 5 * 60_000;
/// A WAL this large means checkpoints cannot keep up.
const LARGE_WAL: u64 = 256 * 1024 * 1024;

#[derive(Serialize)]
struct Report {
    backend: &'static str,
    protocol_version: u32,
    /// The newest migration the ledger records.
    schema_version: Option<String>,
    migrations_applied: usize,
    migrations_pending: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    postgres_installations: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sqlite: Option<SqliteReport>,
    expired_leases: Vec<String>,
    oldest_queued: Option<Oldest>,
    unclaimed_names: Vec<Unclaimed>,
    /// True when a scan stopped at its cap.
    scan_capped: bool,
    problems: Vec<String>,
}

#[derive(Serialize)]
struct SqliteReport {
    integrity: String,
    journal_mode: String,
    file_bytes: u64,
    wal_bytes: u64,
}

#[derive(Serialize)]
struct Oldest {
    id: String,
    name: String,
    queue: String,
    age_ms: i64,
}

#[derive(Serialize)]
struct Unclaimed {
    name: String,
    queue: String,
    waiting: u64,
    oldest_age_ms: i64,
}

pub(crate) async fn run(context: &Context) -> Result<Exit, Failure> {
    let target = context.target()?;
    let ledger = target.migrations().await?;
    let client = context.existing().await?;
    let mut problems = Vec::new();
    let migrations_pending: Vec<String> = ledger.iter().filter(|m| !m.is_applied()).map(|m| m.name.clone()).collect();
    if !migrations_pending.is_empty() {
        problems.push(format!("{} migration(s) pending: run `cairnq migrate`", migrations_pending.len()));
    }
    let (postgres_installations, sqlite) = backend_checks(&target, &mut problems).await?;
    let now = now_ms();
    let (running, running_capped) = scan(&client, TaskStatus::Running).await?;
    let expired_leases: Vec<String> =
        running.iter().filter(|t| t.lease_until_ms.is_some_and(|until| until < now)).map(|t| t.id.clone()).collect();
    if !expired_leases.is_empty() {
        problems.push(format!(
            "{} running task(s) hold expired leases (their worker died or stalled; the next claim recovers them)",
            expired_leases.len()
        ));
    }
    let (queued, queued_capped) = scan(&client, TaskStatus::Queued).await?;
    let oldest_queued = queued.iter().min_by_key(|t| t.created_at_ms).map(|t| Oldest {
        id: t.id.clone(),
        name: t.name.clone(),
        queue: t.queue.clone(),
        age_ms: now - t.created_at_ms,
    });
    let unclaimed_names = unclaimed(&client, &queued, &running, now).await?;
    for u in &unclaimed_names {
        problems.push(format!(
            "{} task(s) of {:?} on queue {:?} wait (oldest {}) and none of that name ran lately: is a worker for it running?",
            u.waiting,
            u.name,
            u.queue,
            short(u.oldest_age_ms.unsigned_abs())
        ));
    }
    let report = Report {
        backend: target.backend(),
        protocol_version: PROTOCOL_VERSION,
        schema_version: ledger.iter().filter(|m| m.is_applied()).map(|m| m.name.clone()).next_back(),
        migrations_applied: ledger.iter().filter(|m| m.is_applied()).count(),
        migrations_pending,
        postgres_installations,
        sqlite,
        expired_leases,
        oldest_queued,
        unclaimed_names,
        scan_capped: running_capped || queued_capped,
        problems,
    };
    match context.out.format {
        Format::Table => context.out.text(&render(&report))?,
        _ => context.out.json(&report)?,
    }
    Ok(if report.problems.is_empty() { Exit::Ok } else { Exit::Failed })
}

async fn backend_checks(
    target: &Target,
    problems: &mut Vec<String>,
) -> Result<(Option<Vec<String>>, Option<SqliteReport>), Failure> {
    match target {
        Target::Sqlite(path) => {
            let health = SqliteStore::file_health(path).await?;
            if !health.is_ok() {
                problems.push(format!("SQLite integrity check failed: {}", health.integrity));
            }
            if health.journal_mode != "wal" {
                problems.push(format!(
                    "journal mode is {}, not wal: readers and the writer block each other",
                    health.journal_mode
                ));
            }
            if health.wal_bytes > LARGE_WAL {
                problems.push(format!(
                    "the WAL holds {} MiB: checkpoints cannot keep up (a long-lived reader?)",
                    health.wal_bytes >> 20
                ));
            }
            let report = SqliteReport {
                integrity: health.integrity,
                journal_mode: health.journal_mode,
                file_bytes: health.file_bytes,
                wal_bytes: health.wal_bytes,
            };
            Ok((None, Some(report)))
        }
        Target::Postgres { dsn, .. } => {
            let schemas = PostgresStore::installations(dsn, target.postgres_options()).await?;
            if schemas.len() > 1 {
                problems.push(format!(
                    "cairnq is installed in {} schemas ({}): processes on different ones never see each other's tasks",
                    schemas.len(),
                    few(&schemas)
                ));
            }
            Ok((Some(schemas), None))
        }
    }
}

/// Every task in `status` (newest first), up to [`SCAN_CAP`]; whether the
/// cap was hit.
async fn scan(client: &CairnQ, status: TaskStatus) -> Result<(Vec<cairnq_core::Task>, bool), Failure> {
    let mut filter = ListFilter::new().status(status).limit(PAGE);
    let mut tasks = Vec::new();
    loop {
        let page = client.list(&filter).await?;
        tasks.extend(page.tasks);
        if tasks.len() >= SCAN_CAP {
            return Ok((tasks, true));
        }
        match page.next {
            Some(next) => filter = filter.after(next),
            None => return Ok((tasks, false)),
        }
    }
}

/// Names with due tasks waiting past [`UNCLAIMED_AFTER_MS`] that nothing
/// runs now and nothing finished lately.
async fn unclaimed(
    client: &CairnQ,
    queued: &[cairnq_core::Task],
    running: &[cairnq_core::Task],
    now: i64,
) -> Result<Vec<Unclaimed>, Failure> {
    let mut stale: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    for task in queued.iter().filter(|t| t.attempt == 0 && t.run_at_ms < now - UNCLAIMED_AFTER_MS) {
        let entry = stale.entry((task.name.clone(), task.queue.clone())).or_insert((0, now));
        entry.0 += 1;
        entry.1 = entry.1.min(task.run_at_ms);
    }
    let mut found = Vec::new();
    for ((name, queue), (waiting, oldest)) in stale {
        if running.iter().any(|t| t.name == name && t.queue == queue) {
            continue;
        }
        let filter = ListFilter::new().name(&name).queue(&queue).status(TaskStatus::Succeeded).limit(1);
        let recent = client.list(&filter).await?.tasks.first().and_then(|t| t.completed_at_ms);
        if recent.is_some_and(|at| at > now - UNCLAIMED_AFTER_MS) {
            continue;
        }
        found.push(Unclaimed { name, queue, waiting, oldest_age_ms: now - oldest });
    }
    Ok(found)
}

/// The first few names, and how many more.
fn few(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{} and {more} more", names[..SHOWN].join(", ")),
        _ => names.join(", "),
    }
}

fn render(report: &Report) -> String {
    let mut lines = vec![
        format!("backend           {}", report.backend),
        format!("protocol version  {}", report.protocol_version),
        format!("schema version    {}", report.schema_version.as_deref().unwrap_or("-")),
        format!("migrations        {} applied, {} pending", report.migrations_applied, report.migrations_pending.len()),
    ];
    if let Some(schemas) = &report.postgres_installations {
        lines.push(format!("installations     {}", few(schemas)));
    }
    if let Some(sqlite) = &report.sqlite {
        lines.push(format!("integrity         {}", sqlite.integrity));
        lines.push(format!(
            "journal           {} (file {} KiB, wal {} KiB)",
            sqlite.journal_mode,
            sqlite.file_bytes >> 10,
            sqlite.wal_bytes >> 10
        ));
    }
    lines.push(format!("expired leases    {}", report.expired_leases.len()));
    lines.push(match &report.oldest_queued {
        Some(o) => {
            format!("oldest queued     {} ({} on {}), {} old", o.id, o.name, o.queue, short(o.age_ms.unsigned_abs()))
        }
        None => "oldest queued     -".to_string(),
    });
    if report.scan_capped {
        lines.push(format!("(scans stopped at {SCAN_CAP} tasks)"));
    }
    if report.problems.is_empty() {
        lines.push("no problems found".to_string());
    } else {
        lines.extend(report.problems.iter().map(|p| format!("problem: {p}")));
    }
    lines.join("\n") + "\n"
}
