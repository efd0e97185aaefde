//! The read operations, run on reader threads.

use cairnq_core::store::{ListFilter, ProbeParams, TaskRow, TaskSelector};
use cairnq_core::{Result, Task, TaskCount, TaskRef};
use cairnq_protocol::sqlite;
use rusqlite::Connection;

use crate::row;
use crate::sql::{Args, query, query_int, query_opt, render};

/// The flag and argument that pick a task by id or by key.
pub(crate) fn selector(task: &TaskSelector) -> (&'static str, Args) {
    match task {
        TaskSelector::Id(id) => ("by_id", Args::new().text("id", id)),
        TaskSelector::Key(key) => ("by_key", Args::new().text("key", key)),
    }
}

pub(crate) fn get(conn: &Connection, task: &TaskSelector) -> Result<Option<Task>> {
    let (flag, args) = selector(task);
    query_opt(conn, render(&sqlite::SELECT_TASK, &[flag])?, &args, row::one_task())
}

pub(crate) fn get_status(conn: &Connection, task: &TaskSelector) -> Result<Option<TaskRef>> {
    let (flag, args) = selector(task);
    query_opt(conn, render(&sqlite::SELECT_TASK_STATUS, &[flag])?, &args, row::task_ref)
}

pub(crate) fn list(conn: &Connection, params: &ListFilter) -> Result<Vec<TaskRow>> {
    let mut flags = Vec::new();
    let mut args = Args::new().set("limit", params.limit).set("offset", params.offset);
    let filters = [
        ("status", params.status.map(|s| s.as_str())),
        ("queue", params.queue.as_deref()),
        ("name", params.name.as_deref()),
        ("root_id", params.root_id.as_deref()),
        ("correlation_id", params.correlation_id.as_deref()),
    ];
    for (flag, value) in filters {
        if let Some(value) = value {
            flags.push(flag);
            args = args.text(flag, value);
        }
    }
    query(conn, render(&sqlite::LIST_TASKS, &flags)?, &args, row::task())
}

pub(crate) fn stats(conn: &Connection, queue: Option<&str>) -> Result<Vec<TaskCount>> {
    let flags: &[&str] = if queue.is_some() { &["queue"] } else { &[] };
    let args = Args::new().opt_text("queue", queue);
    query(conn, render(&sqlite::COUNT_TASKS_BY_QUEUE_STATUS, flags)?, &args, row::task_count)
}

pub(crate) fn count_queued(conn: &Connection, queue: &str, at_most: u64) -> Result<u64> {
    let args = Args::new().text("queue", queue).set("at_most", i64::try_from(at_most).unwrap_or(i64::MAX));
    let count = query_int(conn, render(&sqlite::COUNT_QUEUED, &[])?, &args)?;
    Ok(u64::try_from(count).unwrap_or_default())
}

pub(crate) fn claimable(conn: &Connection, now_ms: i64, params: &ProbeParams) -> Result<bool> {
    let (flags, args) = scope(&params.queues, params.names.as_deref(), Args::new().set("now_ms", now_ms));
    Ok(query_int(conn, render(&sqlite::PROBE_CLAIMABLE, &flags)?, &args)? != 0)
}

/// The queue and name filter of a probe or a claim draw: equality for one
/// value (so the claim indexes are read in order), a JSON array for several
/// (an empty array matches nothing), no name filter for `None`.
pub(crate) fn scope(queues: &[String], names: Option<&[String]>, args: Args) -> (Vec<&'static str>, Args) {
    let (queue_flag, args) = match queues {
        [one] => ("one_queue", args.text("queue", one)),
        many => ("many_queues", args.text("queues", &json_array(many))),
    };
    let mut flags = vec![queue_flag];
    let args = match names {
        None => args,
        Some([one]) => {
            flags.push("one_name");
            args.text("name", one)
        }
        Some(many) => {
            flags.push("many_names");
            args.text("names", &json_array(many))
        }
    };
    (flags, args)
}

pub(crate) fn json_array(items: &[String]) -> String {
    serde_json::Value::from(items.to_vec()).to_string()
}
