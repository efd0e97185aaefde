//! Client-side writes: submit (plain and keyed), cancel, retry, purge.

use std::sync::Arc;

use cairnq_core::coalesce::Coalescer;
use cairnq_core::keys::{KeyedSubmit, resolve_key_conflict};
use cairnq_core::store::{NewTask, PurgeFilter, SubmitRun, in_asked_order, submit_runs};
use cairnq_core::{Error, Json, Result, Task, TaskSelector};
use cairnq_protocol::postgres;

use deadpool_postgres::Pool;

use crate::exec::{Exec, one_row, opt_row, rows, run_sql};
use crate::json::PgJson;
use crate::pool;
use crate::read::{get, selected};
use crate::row::{self, col};
use crate::sql::Args;

/// The per-key lock of a keyed submit: held to the end of the transaction,
/// so concurrent submits of one key queue up behind each other (PROTOCOL.md).
const LOCK_KEY: &str = "select pg_advisory_xact_lock(hashtextextended($1, 0))";

/// Inserts `task`; with a key, applies the key's conflict rule. A keyed
/// submit must run inside a transaction (the key lock lasts until commit).
pub(crate) async fn submit(exec: &impl Exec, task: &NewTask) -> Result<Task> {
    check_json(task)?;
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

/// The most tasks one `insert_tasks` statement carries.
const INSERT_CHUNK: usize = 1_000;

/// Submits `tasks` in order; must run inside one transaction. A keyed task
/// goes on its own, each run of unkeyed ones in `insert_tasks` statements
/// (see [`submit_runs`]).
pub(crate) async fn submit_all(exec: &impl Exec, tasks: &[NewTask]) -> Result<Vec<Task>> {
    // Every item is checked before the first insert is sent.
    tasks.iter().try_for_each(check_json)?;
    let mut submitted = Vec::with_capacity(tasks.len());
    for run in submit_runs(tasks, INSERT_CHUNK) {
        match run {
            SubmitRun::Keyed(task) => submitted.push(submit(exec, task).await?),
            SubmitRun::Unkeyed(run) => submitted.extend(insert_unkeyed(exec, run).await?),
        }
    }
    Ok(submitted)
}

/// Plain submits coalesced into shared writes (see [`Coalescer`]): every
/// unkeyed submit waiting goes out in one `insert_tasks` statement (one
/// commit). A batch the server refuses is written again one task at a
/// time, so each submit gets its own outcome. Callers check the JSON first.
pub(crate) fn submit_queue(pool: Pool) -> Arc<Coalescer<NewTask, Task>> {
    Coalescer::new(
        INSERT_CHUNK,
        Arc::new(move |batch| {
            let pool = pool.clone();
            Box::pin(async move { insert_batch(&pool, batch).await })
        }),
    )
}

async fn insert_batch(pool: &Pool, batch: Vec<NewTask>) -> Vec<Result<Task>> {
    let together = match pool::checkout(pool).await {
        Ok(client) => insert_unkeyed(&client, &batch).await,
        Err(e) => Err(e),
    };
    match together {
        Ok(rows) => rows.into_iter().map(Ok).collect(),
        Err(_) => {
            let mut outcomes = Vec::with_capacity(batch.len());
            for task in &batch {
                outcomes.push(match pool::checkout(pool).await {
                    Ok(client) => insert(&client, task).await,
                    Err(e) => Err(e),
                });
            }
            outcomes
        }
    }
}

/// One `insert_tasks` for `tasks`; the rows in the order given.
async fn insert_unkeyed(exec: &impl Exec, tasks: &[NewTask]) -> Result<Vec<Task>> {
    fn column<T>(tasks: &[NewTask], field: impl Fn(&NewTask) -> T) -> Vec<T> {
        tasks.iter().map(field).collect()
    }
    let args = Args::new()
        .set("ids", column(tasks, |t| t.id.clone()))
        .set("names", column(tasks, |t| t.name.clone()))
        .set("queues", column(tasks, |t| t.queue.clone()))
        .set("payloads", column(tasks, |t| PgJson(t.payload.clone())))
        .set("metadatas", column(tasks, |t| PgJson(t.metadata.clone())))
        .set("max_attempts", column(tasks, |t| t.max_attempts))
        .set("priorities", column(tasks, |t| t.priority))
        .set("delays_ms", column(tasks, |t| t.delay_ms))
        .set("parent_ids", column(tasks, |t| t.parent_id.clone()))
        .set("root_ids", column(tasks, |t| t.root_id.clone()))
        .set("correlation_ids", column(tasks, |t| t.correlation_id.clone()));
    let inserted = rows(exec, &postgres::INSERT_TASKS, &[], &args).await?;
    let inserted = inserted.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    let ordered = in_asked_order(tasks.iter().map(|t| t.id.as_str()), inserted, |t| &t.id);
    if ordered.len() == tasks.len() {
        Ok(ordered)
    } else {
        Err(Error::corrupt_row(format!("insert_tasks returned {} of {} rows", ordered.len(), tasks.len())))
    }
}

async fn insert(exec: &impl Exec, task: &NewTask) -> Result<Task> {
    let args = Args::new()
        .set("id", task.id.clone())
        .set("name", task.name.clone())
        .set("queue", task.queue.clone())
        .set("payload", PgJson(task.payload.clone()))
        .set("metadata", PgJson(task.metadata.clone()))
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

/// Whether `task`'s payload and metadata fit in jsonb (see [`check_jsonb`]).
pub(crate) fn check_json(task: &NewTask) -> Result<()> {
    check_jsonb("payload", &task.payload)?;
    check_jsonb("metadata", &task.metadata)
}

/// Postgres jsonb cannot hold `\u0000` inside a string (nor a key), nor a
/// lone UTF-16 surrogate escape: refuse such a value before anything is
/// written.
pub(crate) fn check_jsonb(field: &str, value: &Json) -> Result<()> {
    if value.contains_nul() {
        return Err(refused(field, "\\u0000 in a string"));
    }
    if value.contains_lone_surrogate() {
        return Err(refused(field, "a lone UTF-16 surrogate escape"));
    }
    Ok(())
}

fn refused(field: &str, what: &str) -> Error {
    Error::Serialization(format!("{field} holds {what}, which Postgres jsonb cannot store"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_nul_anywhere_in_a_json_value() {
        let check = |value: serde_json::Value| check_jsonb("payload", &Json::from(value));
        assert!(check(json!({"a": ["ok", 1, null, "\\u0000 is text"]})).is_ok());
        assert!(check(json!("a\u{0}b")).is_err());
        assert!(check(json!({"a": [{"b": "\u{0}"}]})).is_err());
        assert!(check(json!({"k\u{0}": 1})).is_err());
    }

    #[test]
    fn refuses_lone_surrogates_but_not_pairs() {
        let check = |text: &str| check_jsonb("payload", &Json::parse(text.to_string()).expect("valid JSON text"));
        assert!(check(r#"["\ud83d\ude00", "\u00e9"]"#).is_ok());
        assert!(check(r#"["\ud800"]"#).is_err());
        assert!(check(r#"["\udc00"]"#).is_err());
    }
}
