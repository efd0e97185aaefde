//! Whether the task counts `stats` reads agree with the rows. The SQL
//! backends keep them in a counter table (`cairnq_ext_task_counts`,
//! maintained by triggers), so a count is a few rows however large the
//! queue. Triggers keep it exact; only a file salvaged from damage (a
//! `.recover` copies the counter table as it was, rows lost or not) or a
//! hand edit with the triggers off can leave it wrong, and then every
//! count, the gauges and the producers' queue-depth headroom are wrong
//! with it. So the doctor counts each queue and status from the rows and
//! compares.

use cairnq_core::store::CountTasksParams;
use cairnq_core::{CairnQ, ListFilter, TaskStatus};
use serde::Serialize;

use crate::db::Target;
use crate::exit::Failure;

/// A group counted larger than this is not recounted (a count reads every
/// one of its index entries).
const RECOUNT_CAP: u64 = 1_000_000;

/// One queue and status whose kept count differs from its rows.
#[derive(Serialize)]
pub(super) struct Miscount {
    queue: String,
    status: TaskStatus,
    /// What `stats` says.
    counted: u64,
    /// How many rows there are.
    rows: u64,
}

/// Recounts every queue and status `stats` reports (up to
/// [`RECOUNT_CAP`] each), adding a problem with the remedy when one
/// differs.
pub(super) async fn check(
    client: &CairnQ,
    target: &Target,
    problems: &mut Vec<String>,
) -> Result<Vec<Miscount>, Failure> {
    let mut found = Vec::new();
    for (queue, counts) in client.stats(None).await? {
        for status in TaskStatus::ALL {
            let counted = counts.get(status);
            if counted >= RECOUNT_CAP {
                continue;
            }
            let filter = ListFilter::new().queue(&queue).status(status);
            let rows = client.count_tasks(&CountTasksParams::new(filter, counted + 1)).await?;
            if rows != counted {
                found.push(Miscount { queue: queue.clone(), status, counted, rows });
            }
        }
    }
    if let Some(first) = found.first() {
        problems.push(format!(
            "the task counts disagree with the rows in {} place(s) (queue {:?}, {}: {} counted, {}{} rows), so stats, \
             gauges and queue-depth limits are wrong: recount them with {}",
            found.len(),
            first.queue,
            first.status,
            first.counted,
            first.rows,
            if first.rows > first.counted { "+" } else { "" },
            recount(target)
        ));
    }
    Ok(found)
}

/// The statement that rebuilds the counter table from the rows, in one
/// transaction that keeps writers out meanwhile.
fn recount(target: &Target) -> String {
    const REBUILD: &str = "delete from cairnq_ext_task_counts; insert into cairnq_ext_task_counts (queue, status, n) \
                           select queue, status, count(*) from cairnq_tasks group by queue, status;";
    match target {
        Target::Sqlite(path) => format!("`sqlite3 {} \"begin immediate; {REBUILD} commit;\"`", path.display()),
        Target::Postgres { schema, .. } => {
            let path = schema.as_deref().map_or(String::new(), |s| format!("set search_path to {s}; "));
            format!("`psql DSN -c \"{path}begin; lock table cairnq_tasks in share mode; {REBUILD} commit;\"`")
        }
    }
}
