//! Writes whose statements are Postgres's own shape: inserts (one row, and
//! many rows column-wise), the coalesced queue of plain submits, and
//! `complete_batch`; plus the JSON check jsonb needs. Every other write is
//! a flow of `cairnq_sql::flows` run over [`PgExec`](crate::exec::PgExec).

use std::collections::HashMap;
use std::sync::Arc;

use cairnq_core::backend::{Coalescer, in_asked_order};
use cairnq_core::store::{CompleteBatchParams, NewTask};
use cairnq_core::{Error, Json, Result, Task, TaskRef};
use cairnq_sql::{Query, Sql, purpose};

use crate::conn::Connections;
use crate::exec::{Exec, one_row, rows};
use crate::row;

/// The most tasks one `insert_tasks` statement carries.
const INSERT_CHUNK: usize = 1_000;

/// Plain submits coalesced into shared writes (see [`Coalescer`]): every
/// unkeyed submit waiting goes out in one `insert_tasks` statement (one
/// commit). A batch the server refuses is written again one task at a
/// time, so each submit gets its own outcome. Callers check the JSON first.
pub(crate) fn submit_queue(conns: Connections) -> Arc<Coalescer<NewTask, Task>> {
    Coalescer::new(
        INSERT_CHUNK,
        Arc::new(move |batch| {
            let conns = conns.clone();
            Box::pin(async move { insert_batch(&conns, batch).await })
        }),
    )
}

async fn insert_batch(conns: &Connections, batch: Vec<NewTask>) -> Vec<Result<Task>> {
    let together = match conns.get().await {
        Ok(client) => insert_unkeyed(&client, &batch).await,
        Err(e) => Err(e),
    };
    match together {
        Ok(rows) => rows.into_iter().map(Ok).collect(),
        Err(_) => {
            let mut outcomes = Vec::with_capacity(batch.len());
            for task in &batch {
                outcomes.push(match conns.get().await {
                    Ok(client) => insert(&client, task).await,
                    Err(e) => Err(e),
                });
            }
            outcomes
        }
    }
}

/// One `insert_tasks` for `tasks` (the i-th element of each array belongs
/// to the i-th task); the rows in the order given.
pub(crate) async fn insert_unkeyed(exec: &impl Exec, tasks: &[NewTask]) -> Result<Vec<Task>> {
    fn column<T>(tasks: &[NewTask], field: impl Fn(&NewTask) -> T) -> Vec<T> {
        tasks.iter().map(field).collect()
    }
    let query = Query::new(Sql::InsertTasks)
        .arg("ids", column(tasks, |t| t.id.clone()))
        .arg("names", column(tasks, |t| t.name.clone()))
        .arg("queues", column(tasks, |t| t.queue.clone()))
        .arg("payloads", column(tasks, |t| t.payload.clone()))
        .arg("metadatas", column(tasks, |t| t.metadata.clone()))
        .arg("max_attempts", column(tasks, |t| i64::from(t.max_attempts)))
        .arg("priorities", column(tasks, |t| i64::from(t.priority)))
        .arg("delays_ms", column(tasks, |t| t.delay_ms))
        .arg("parent_ids", column(tasks, |t| t.parent_id.clone()))
        .arg("root_ids", column(tasks, |t| t.root_id.clone()))
        .arg("correlation_ids", column(tasks, |t| t.correlation_id.clone()));
    let inserted: Vec<Task> = row::decode_all(&rows(exec, &query).await?)?;
    let ordered = in_asked_order(tasks.iter().map(|t| t.id.as_str()), inserted, |t| &t.id);
    if ordered.len() == tasks.len() {
        Ok(ordered)
    } else {
        let answered = format!("the database answered {} of {} rows", ordered.len(), tasks.len());
        Err(Error::corrupt_row(cairnq_core::could_not(purpose(Sql::InsertTasks), answered)))
    }
}

/// One `insert_task`; the row as the server wrote it.
pub(crate) async fn insert(exec: &impl Exec, task: &NewTask) -> Result<Task> {
    row::decode(&one_row(exec, &Query::insert(task)).await?)
}

/// Completes many tasks in one statement (results as one jsonb object by
/// task id); the settled ones in the order asked.
pub(crate) async fn complete_batch(exec: &impl Exec, p: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
    p.completions.iter().try_for_each(|(_, result)| check_jsonb("result", result))?;
    let ids: Vec<String> = p.completions.iter().map(|(id, _)| id.clone()).collect();
    let results: HashMap<&str, &Json> = p.completions.iter().map(|(id, r)| (id.as_str(), r)).collect();
    let query = Query::new(Sql::CompleteTasks)
        .arg("ids", ids)
        .arg("results", Json::encode(&results)?)
        .arg("worker_id", &p.worker_id);
    let settled: Vec<TaskRef> = row::decode_all(&rows(exec, &query).await?)?;
    Ok(in_asked_order(p.completions.iter().map(|(id, _)| id.as_str()), settled, |t| &t.id))
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
