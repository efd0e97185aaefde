//! Small pieces every backend needs and none should write again: the
//! `LostLease` error, reordering batch results, isolating undecodable
//! claimed rows, narrowing integer columns, and cutting a `submit_many`
//! into runs.

use crate::envelope::ErrorEnvelope;
use crate::error::Error;
use crate::json::Json;
use crate::model::Task;
use crate::model::Undecodable;
use crate::store::{NewTask, TaskRow};

/// The `LostLease` error for an ownership-checked write that matched nothing.
pub fn lost_lease(task_id: &str, worker_id: &str) -> Error {
    Error::LostLease { task_id: task_id.to_string(), worker_id: worker_id.to_string() }
}

/// `found` rearranged into the order the ids were `asked`, for batch writes
/// whose statements return rows in no particular order; an id that found
/// nothing is left out.
pub fn in_asked_order<'a, T>(
    asked: impl IntoIterator<Item = &'a str>,
    found: Vec<T>,
    id: impl Fn(&T) -> &str,
) -> Vec<T> {
    let mut by_id: std::collections::HashMap<String, T> =
        found.into_iter().map(|item| (id(&item).to_string(), item)).collect();
    asked.into_iter().filter_map(|wanted| by_id.remove(wanted)).collect()
}

/// Splits the rows a claim drew into the tasks to run and the rows to fail
/// as undecodable, each with the envelope to record (backends then fail
/// those in the claim's own transaction, owned by the claiming worker).
pub fn fail_undecodable(rows: Vec<TaskRow>) -> (Vec<Task>, Vec<(Undecodable, Json)>) {
    let mut tasks = Vec::with_capacity(rows.len());
    let mut bad = Vec::new();
    for row in rows {
        match row {
            Ok(task) => tasks.push(task),
            Err(row) => {
                let envelope = ErrorEnvelope::undecodable(&row).to_json();
                bad.push((row, envelope));
            }
        }
    }
    (tasks, bad)
}

/// One step of a `submit_many` (see [`submit_runs`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SubmitRun<'a> {
    /// A keyed task, submitted on its own: it must see an earlier item's key.
    Keyed(&'a NewTask),
    /// Consecutive unkeyed tasks, at most the asked chunk size: one
    /// multi-row insert.
    Unkeyed(&'a [NewTask]),
}

/// `tasks` in order, cut into keyed tasks and runs of at most `chunk`
/// unkeyed ones, so a backend inserts each run with one statement.
///
/// ```
/// # use cairnq_core::backend::{submit_runs, SubmitRun};
/// let runs: Vec<SubmitRun<'_>> = submit_runs(&[], 100).collect();
/// assert!(runs.is_empty());
/// ```
pub fn submit_runs(tasks: &[NewTask], chunk: usize) -> impl Iterator<Item = SubmitRun<'_>> {
    let mut rest = tasks;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        if first.key.is_some() {
            rest = &rest[1..];
            return Some(SubmitRun::Keyed(first));
        }
        let run = rest.iter().take(chunk.max(1)).take_while(|t| t.key.is_none()).count();
        let (now, later) = rest.split_at(run);
        rest = later;
        Some(SubmitRun::Unkeyed(now))
    })
}

/// An integer column narrowed to the type the model gives it (`attempt`
/// and `max_attempts` are `u32`, `priority` is `i32`): a value no cairnq
/// SDK writes, such as a negative attempt, is the reason a row does not
/// decode.
///
/// ```
/// use cairnq_core::backend::narrow;
/// assert_eq!(narrow::<u32>(3), Ok(3));
/// assert!(narrow::<u32>(-1).is_err());
/// ```
pub fn narrow<T: TryFrom<i64>>(value: i64) -> Result<T, String> {
    T::try_from(value).map_err(|_| format!("{value} is out of range for {}", std::any::type_name::<T>()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Conflict;

    fn task(key: Option<&str>) -> NewTask {
        NewTask {
            id: crate::id::new_task_id(),
            name: "n".into(),
            queue: "q".into(),
            payload: Json::null(),
            metadata: Json::empty_object(),
            max_attempts: 3,
            priority: 0,
            delay_ms: 0,
            parent_id: None,
            root_id: "r".into(),
            correlation_id: None,
            key: key.map(str::to_string),
            conflict: Conflict::default(),
        }
    }

    #[test]
    fn submit_runs_keep_order_split_at_keys_and_respect_the_chunk() {
        let tasks: Vec<NewTask> = [None, None, None, Some("a"), Some("b"), None].into_iter().map(task).collect();
        let shape: Vec<(bool, usize)> = submit_runs(&tasks, 2)
            .map(|run| match run {
                SubmitRun::Keyed(_) => (true, 1),
                SubmitRun::Unkeyed(run) => (false, run.len()),
            })
            .collect();
        assert_eq!(shape, [(false, 2), (false, 1), (true, 1), (true, 1), (false, 1)]);
        let ids: Vec<&str> = submit_runs(&tasks, 2)
            .flat_map(|run| match run {
                SubmitRun::Keyed(t) => std::slice::from_ref(t),
                SubmitRun::Unkeyed(run) => run,
            })
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids, tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), "every task once, in order");
        assert_eq!(submit_runs(&tasks[..1], 0).count(), 1, "a zero chunk still makes progress");
    }
}
