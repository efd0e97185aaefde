//! Client-side writes: submit (plain and keyed), cancel, retry, purge.

use cairnq_core::keys::{KeyedSubmit, resolve_key_conflict};
use cairnq_core::store::{NewTask, PurgeFilter};
use cairnq_core::{Error, Result, Task, TaskSelector};
use cairnq_protocol::postgres;
use futures::future::try_join_all;
use serde_json::Value;

use crate::exec::{Exec, one_row, opt_row, rows, run_sql};
use crate::read::{get, selected};
use crate::row::{self, col};
use crate::sql::Args;

/// The per-key lock of a keyed submit: held to the end of the transaction,
/// so concurrent submits of one key queue up behind each other (PROTOCOL.md).
const LOCK_KEY: &str = "select pg_advisory_xact_lock(hashtextextended($1, 0))";

/// Inserts `task`; with a key, applies the key's conflict rule. A keyed
/// submit must run inside a transaction (the key lock lasts until commit).
pub(crate) async fn submit(exec: &impl Exec, task: &NewTask) -> Result<Task> {
    check_jsonb("payload", &task.payload)?;
    check_jsonb("metadata", &task.metadata)?;
    let Some(key) = &task.key else { return insert(exec, task).await };
    run_sql(exec, "lock key", LOCK_KEY, &[key]).await?;
    let args = Args::new().set("key", key.clone());
    let existing =
        opt_row(exec, &postgres::SELECT_KEY_TASK, &[], &args).await?.as_ref().map(row::task_ref).transpose()?;
    let decision = resolve_key_conflict(task.conflict, key, existing.as_ref())?;
    if let Some(old) = &existing {
        let old = TaskSelector::Id(old.id.clone());
        match decision {
            // The key's task vanishes here only through a concurrent purge;
            // the key is then free and the submit inserts.
            KeyedSubmit::ReturnExisting => {
                if let Some(found) = get(exec, &old).await? {
                    return Ok(found);
                }
            }
            KeyedSubmit::Insert { cancel_existing: true } => {
                cancel(exec, &old).await?;
            }
            KeyedSubmit::Insert { cancel_existing: false } => {}
        }
    }
    let inserted = insert(exec, task).await?;
    let args = Args::new().set("key", key.clone()).set("task_id", inserted.id.clone());
    rows(exec, &postgres::UPSERT_TASK_KEY, &[], &args).await?;
    Ok(inserted)
}

/// At most this many inserts in flight at once on one connection.
const PIPELINE: usize = 256;

/// Submits `tasks` in order; must run inside one transaction. A run of
/// unkeyed tasks is pipelined (sent without waiting for each answer, which
/// on a loopback connection costs more than the insert); a keyed task waits
/// for everything before it, as it must see an earlier item's key.
pub(crate) async fn submit_all(exec: &impl Exec, tasks: &[NewTask]) -> Result<Vec<Task>> {
    // Every item is checked before the first insert is sent.
    tasks
        .iter()
        .try_for_each(|t| check_jsonb("payload", &t.payload).and_then(|()| check_jsonb("metadata", &t.metadata)))?;
    let mut submitted = Vec::with_capacity(tasks.len());
    let mut rest = tasks;
    while let Some(first) = rest.first() {
        let run = rest.iter().take(PIPELINE).take_while(|t| t.key.is_none()).count().max(1);
        let (now, later) = rest.split_at(run);
        if first.key.is_some() {
            submitted.push(submit(exec, first).await?);
        } else {
            submitted.extend(try_join_all(now.iter().map(|task| submit(exec, task))).await?);
        }
        rest = later;
    }
    Ok(submitted)
}

async fn insert(exec: &impl Exec, task: &NewTask) -> Result<Task> {
    let args = Args::new()
        .set("id", task.id.clone())
        .set("name", task.name.clone())
        .set("queue", task.queue.clone())
        .set("payload", task.payload.clone())
        .set("metadata", task.metadata.clone())
        .set("max_attempts", task.max_attempts)
        .set("priority", task.priority)
        .set("delay_ms", task.delay_ms)
        .set("parent_id", task.parent_id.clone())
        .set("root_id", task.root_id.clone())
        .set("correlation_id", task.correlation_id.clone());
    row::task(&one_row(exec, &postgres::INSERT_TASK, &[], &args).await?)
}

/// Queued -> canceled; running -> cancel requested; else `None`.
pub(crate) async fn cancel(exec: &impl Exec, task: &TaskSelector) -> Result<Option<Task>> {
    let (flag, args) = selected(task);
    opt_row(exec, &postgres::CANCEL_TASK, &[flag], &args).await?.as_ref().map(row::task).transpose()
}

/// Failed or canceled -> queued now; else `None`.
pub(crate) async fn retry(exec: &impl Exec, task: &TaskSelector, reset_attempt: bool) -> Result<Option<Task>> {
    let (flag, args) = selected(task);
    let flags: &[&str] = if reset_attempt { &[flag, "reset_attempt"] } else { &[flag] };
    opt_row(exec, &postgres::RETRY_TASK, flags, &args).await?.as_ref().map(row::task).transpose()
}

/// Deletes terminal rows; returns their ids.
pub(crate) async fn purge(exec: &impl Exec, params: &PurgeFilter) -> Result<Vec<String>> {
    let mut args = Args::new().set("older_than_ms", params.older_than_ms).set("limit", params.limit);
    let mut flags = Vec::new();
    match params.status {
        Some(status) => {
            flags.push("status");
            args = args.set("status", status.as_str());
        }
        None => flags.push("any_status"),
    }
    for (flag, value) in [("queue", &params.queue), ("name", &params.name)] {
        if let Some(value) = value {
            flags.push(flag);
            args = args.set(flag, value.clone());
        }
    }
    rows(exec, &postgres::PURGE_TASKS, &flags, &args).await?.iter().map(|r| col(r, "id")).collect()
}

/// Postgres jsonb cannot hold `\u0000` inside a string (nor a key): refuse
/// such a value before anything is written.
pub(crate) fn check_jsonb(field: &str, value: &Value) -> Result<()> {
    let refused =
        || Error::Serialization(format!("{field} holds \\u0000 in a string, which Postgres jsonb cannot store"));
    match value {
        Value::String(s) if s.contains('\0') => Err(refused()),
        Value::Array(items) => items.iter().try_for_each(|v| check_jsonb(field, v)),
        Value::Object(map) => {
            map.iter().try_for_each(|(k, v)| if k.contains('\0') { Err(refused()) } else { check_jsonb(field, v) })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_nul_anywhere_in_a_json_value() {
        assert!(check_jsonb("payload", &json!({"a": ["ok", 1, null]})).is_ok());
        assert!(check_jsonb("payload", &json!("a\u{0}b")).is_err());
        assert!(check_jsonb("payload", &json!({"a": [{"b": "\u{0}"}]})).is_err());
        assert!(check_jsonb("payload", &json!({"k\u{0}": 1})).is_err());
    }
}
