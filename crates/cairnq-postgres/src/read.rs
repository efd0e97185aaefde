//! Read-only operations: get, get_status, list, stats, the bounded queued
//! count, and the claim probe.

use cairnq_core::store::{ListFilter, ProbeParams, TaskRow};
use cairnq_core::{Result, Task, TaskCount, TaskRef, TaskSelector};
use cairnq_protocol::postgres;

use crate::exec::{Exec, answer, one_row, opt_row, rows};
use crate::row::{self, col};
use crate::sql::Args;

/// The `by_id` / `by_key` flag and argument of a selector.
pub(crate) fn selected(task: &TaskSelector) -> (&'static str, Args) {
    match task {
        TaskSelector::Id(id) => ("by_id", Args::new().set("id", id.clone())),
        TaskSelector::Key(key) => ("by_key", Args::new().set("key", key.clone())),
    }
}

/// The whole row, or `None`.
pub(crate) async fn get(exec: &impl Exec, task: &TaskSelector) -> Result<Option<Task>> {
    let (flag, args) = selected(task);
    opt_row(exec, &postgres::SELECT_TASK, &[flag], &args).await?.as_ref().map(row::task).transpose()
}

/// Id and status, or `None`.
pub(crate) async fn get_status(exec: &impl Exec, task: &TaskSelector) -> Result<Option<TaskRef>> {
    let (flag, args) = selected(task);
    opt_row(exec, &postgres::SELECT_TASK_STATUS, &[flag], &args).await?.as_ref().map(row::task_ref).transpose()
}

/// Rows matching the filters given, newest first.
pub(crate) async fn list(exec: &impl Exec, params: &ListFilter) -> Result<Vec<TaskRow>> {
    let mut flags = Vec::new();
    let mut args = Args::new().set("limit", params.limit).set("offset", params.offset);
    let filters = [
        ("status", params.status.map(|s| s.as_str().to_string())),
        ("queue", params.queue.clone()),
        ("name", params.name.clone()),
        ("root_id", params.root_id.clone()),
        ("correlation_id", params.correlation_id.clone()),
    ];
    for (flag, value) in filters {
        if let Some(value) = value {
            flags.push(flag);
            args = args.set(flag, value);
        }
    }
    Ok(rows(exec, &postgres::LIST_TASKS, &flags, &args).await?.iter().map(row::task_row).collect())
}

/// Row counts by queue and status.
pub(crate) async fn stats(exec: &impl Exec, queue: Option<&str>) -> Result<Vec<TaskCount>> {
    let (flags, args): (&[&str], Args) = match queue {
        Some(q) => (&["queue"], Args::new().set("queue", q.to_string())),
        None => (&[], Args::new()),
    };
    rows(exec, &postgres::COUNT_TASKS_BY_QUEUE_STATUS, flags, &args).await?.iter().map(row::task_count).collect()
}

/// Queued rows on `queue`, counting at most `at_most`.
pub(crate) async fn count_queued(exec: &impl Exec, queue: &str, at_most: u64) -> Result<u64> {
    let args = Args::new().set("queue", queue.to_string()).set("at_most", i64::try_from(at_most).unwrap_or(i64::MAX));
    let count: i64 = col(&one_row(exec, &postgres::COUNT_QUEUED, &[], &args).await?, "count")?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The claim gate: anything due here, or any expired lease?
pub(crate) async fn claimable(exec: &impl Exec, params: &ProbeParams) -> Result<bool> {
    let (flags, args) = scope(&params.queues, params.names.as_deref(), Args::new());
    answer(exec, &postgres::PROBE_CLAIMABLE, &flags, &args).await
}

/// The queue and name filter forms (`one_*` / `many_*`) of a probe or claim.
pub(crate) fn scope(queues: &[String], names: Option<&[String]>, args: Args) -> (Vec<&'static str>, Args) {
    let (mut flags, mut args) = match queues {
        [one] => (vec!["one_queue"], args.set("queue", one.clone())),
        many => (vec!["many_queues"], args.set("queues", many.to_vec())),
    };
    match names {
        None => {}
        Some([one]) => {
            flags.push("one_name");
            args = args.set("name", one.clone());
        }
        Some(many) => {
            flags.push("many_names");
            args = args.set("names", many.to_vec());
        }
    }
    (flags, args)
}
