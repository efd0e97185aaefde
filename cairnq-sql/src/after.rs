//! Task dependencies written once over an [`Executor`] (extension
//! `ext_0008_task_dependencies`): the submit of a task that waits for
//! others, and the reads of its dependencies and wait. The release itself
//! is no code of ours at run time: the migration's trigger does it in the
//! transaction that settles a dependency, whichever SDK settles it.
//!
//! [`submit_after`] runs in the caller's transaction, so a flow that
//! writes more (a handler's fan-out settled with its own success) calls it
//! beside its other writes.

use std::collections::HashMap;

use cairnq_core::store::{DependenciesParams, SubmitAfterParams, TaskRow, TaskSelector, TaskWaitsParams};
use cairnq_core::{
    DependencyFailure, Error, Result, Task, TaskRef, TaskStatus, TaskWait, Undecodable, dependency_failed,
};
use cairnq_protocol::Sql;

use crate::flows::{Executor, submit};
use crate::query::Query;

/// Whether the database has the dependency tables (a database another SDK
/// installed, opened as it is, may lack them).
async fn installed(exec: &impl Executor) -> Result<bool> {
    Ok(exec.rows::<String>(Query::new(Sql::DependenciesInstalled)).await?.first().is_some_and(|found| found == "1"))
}

/// Inserts a task waiting for `params.after`, in the caller's transaction.
/// The dependencies are read (on Postgres, share-locked) first: an unknown
/// one refuses the submit before anything is written, and none of them can
/// end unseen between this read and the edges' insert.
pub async fn submit_after(exec: &impl Executor, params: &SubmitAfterParams) -> Result<Task> {
    submit_after_known(exec, params, &HashMap::new()).await
}

/// [`submit_after`], where `known` holds the status of dependencies the
/// caller's transaction inserted itself (a fan-out's new children): those
/// are neither read nor locked again, since no other transaction sees them,
/// let alone ends them, before the commit.
pub(crate) async fn submit_after_known(
    exec: &impl Executor,
    params: &SubmitAfterParams,
    known: &HashMap<String, TaskStatus>,
) -> Result<Task> {
    if !installed(exec).await? {
        return Err(Error::validation(
            "after",
            "this database has no dependency tables (extension ext_0008_task_dependencies): migrate it with \
             `cairnq migrate` or open it with Install::Migrate",
        ));
    }
    let unknown: Vec<String> = params.after.iter().filter(|id| !known.contains_key(id.as_str())).cloned().collect();
    let found = if unknown.is_empty() {
        Vec::new()
    } else {
        exec.rows::<TaskRef>(Query::new(Sql::LockDependencies).arg("ids", unknown)).await?
    };
    let mut status: HashMap<&str, TaskStatus> = known.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    status.extend(found.iter().map(|r| (r.id.as_str(), r.status)));
    if let Some(missing) = params.after.iter().find(|id| !status.contains_key(id.as_str())) {
        return Err(Error::validation(
            "after",
            format!("no task {missing} exists: a dependency must be submitted first"),
        ));
    }
    let task = submit(exec, &params.task).await?;
    if task.id != params.task.id {
        // A key returned a task submitted before: it waits as it did.
        return Ok(task);
    }
    let ended = |id: &String| Some(status[id.as_str()]).filter(|s| s.is_terminal());
    let outcomes: Vec<Option<String>> =
        params.after.iter().map(|id| ended(id).map(|s| s.as_str().to_string())).collect();
    let remaining = outcomes.iter().filter(|o| o.is_none()).count();
    let insert = Query::new(Sql::InsertDependencies)
        .arg("task_id", &task.id)
        .arg("ids", params.after.clone())
        .arg("outcomes", outcomes);
    exec.rows::<()>(insert).await?;
    let wait = Query::new(Sql::InsertTaskWait)
        .arg("task_id", &task.id)
        .arg("on_failure", params.on_failure.as_str())
        .arg("total", count(params.after.len()))
        .arg("remaining", count(remaining));
    exec.rows::<()>(wait).await?;
    let failed = params.after.iter().find(|id| ended(id).is_some_and(|s| s != TaskStatus::Succeeded));
    let query = match failed {
        Some(dependency) if params.on_failure == DependencyFailure::Cancel => {
            let row =
                exec.rows::<TaskRow>(Query::new(Sql::SelectTask).select(&TaskSelector::Id(dependency.clone()))).await?;
            let name = row.into_iter().next().and_then(Result::ok).map(|t| t.name).unwrap_or_default();
            let envelope = dependency_failed(dependency, &name, status[dependency.as_str()]);
            Query::new(Sql::CancelForDependency).arg("id", &task.id).arg("error", envelope.to_json())
        }
        _ if remaining > 0 => Query::new(Sql::HoldTask).arg("id", &task.id),
        _ => return Ok(task),
    };
    let changed = exec.rows::<TaskRow>(query).await?.into_iter().next().transpose().map_err(Undecodable::into_error)?;
    changed.ok_or_else(|| Error::corrupt_row("the task submitted with dependencies vanished in its own transaction"))
}

/// A count of dependencies as the integer column stores it.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The dependency rows of a task, in the order its submit named them.
pub async fn dependencies(exec: &impl Executor, params: &DependenciesParams) -> Result<Vec<TaskRow>> {
    if !installed(exec).await? {
        return Ok(Vec::new());
    }
    exec.rows::<TaskRow>(Query::new(Sql::SelectDependencies).arg("task_id", &params.task_id)).await
}

/// The waits of the tasks asked that have one.
pub async fn task_waits(exec: &impl Executor, params: &TaskWaitsParams) -> Result<Vec<TaskWait>> {
    if params.task_ids.is_empty() || !installed(exec).await? {
        return Ok(Vec::new());
    }
    let rows = exec.rows::<String>(Query::new(Sql::SelectTaskWaits).arg("ids", params.task_ids.clone())).await?;
    rows.iter()
        .map(|row| serde_json::from_str(row).map_err(|e| Error::corrupt_row(format!("a task wait row: {e}"))))
        .collect()
}
