//! The client-side operations of [`MemoryStore`](super::MemoryStore) over
//! its tables: keyed submits, reads, counts, cancel, retry and purge, each
//! doing what the protocol's statement for it does (PROTOCOL.md
//! "Operations" and "Details that are easy to get wrong").

use std::collections::BTreeSet;

use cairnq_core::backend::{KeyedSubmit, TaskRow, resolve_key_conflict};
use cairnq_core::store::{
    CancelParams, ChildrenParams, CountQueuedParams, CountTasksParams, GetParams, ListFilter, NewTask, PurgeFilter,
    RetryParams, StatsParams, SubmitManyParams,
};
use cairnq_core::{Error, QueueAge, Result, Task, TaskCount, TaskRef, TaskSelector, TaskStatus};

use super::tables::{Tables, Txn};

/// Inserts `task`; with a key: reads the key's task (a purged task frees
/// the key), applies the conflict rule, cancels the recorded task with the
/// ordinary cancel when replacing a live one, inserts and repoints.
pub(super) fn submit(txn: &mut Txn<'_>, task: &NewTask) -> Result<Task> {
    let row = task.inserted_row(txn.now_ms);
    let Some(key) = &task.key else {
        txn.insert(row.clone())?;
        return Ok(row);
    };
    let existing = txn.tables().key_task(key).map(Task::as_ref);
    match (resolve_key_conflict(task.conflict, key, existing.as_ref())?, existing) {
        (KeyedSubmit::ReturnExisting, Some(old)) => {
            if let Some(found) = txn.tables().task(&old.id) {
                return Ok(found.clone());
            }
        }
        (KeyedSubmit::Insert { cancel_existing: true }, Some(old)) => {
            cancel(txn, &CancelParams::new(TaskSelector::Id(old.id)));
        }
        _ => {}
    }
    txn.insert(row.clone())?;
    txn.point_key(key, &row.id);
    Ok(row)
}

/// Submits every task in order in one operation (a later task sees an
/// earlier one's key); the caller rolls everything back on an error.
pub(super) fn submit_many(txn: &mut Txn<'_>, params: &SubmitManyParams) -> Result<Vec<Task>> {
    params.tasks.iter().map(|task| submit(txn, task)).collect()
}

/// The whole row, or `None`.
pub(super) fn get(tables: &Tables, params: &GetParams) -> Option<Task> {
    tables.select(&params.task).cloned()
}

/// Id and status, or `None`.
pub(super) fn get_status(tables: &Tables, params: &GetParams) -> Option<TaskRef> {
    tables.select(&params.task).map(Task::as_ref)
}

/// Rows matching every filter given, newest first, paged.
pub(super) fn list(tables: &Tables, filter: &ListFilter) -> Result<Vec<TaskRow>> {
    let limit = usize::try_from(filter.limit).map_err(|_| Error::validation("limit", "must not be negative"))?;
    let offset = usize::try_from(filter.offset).map_err(|_| Error::validation("offset", "must not be negative"))?;
    Ok(matching(tables, filter).skip(offset).take(limit).map(|t| Ok(t.clone())).collect())
}

/// Rows matching the filter (not its paging), newest first.
fn matching<'a>(tables: &'a Tables, filter: &'a ListFilter) -> impl Iterator<Item = &'a Task> {
    let text = |wanted: &Option<String>, value: Option<&str>| wanted.as_deref().is_none_or(|w| Some(w) == value);
    tables
        .newest_first()
        .filter(|t| filter.status.is_none_or(|s| s == t.status))
        .filter(move |t| text(&filter.queue, Some(&t.queue)) && text(&filter.name, Some(&t.name)))
        .filter(move |t| text(&filter.root_id, t.root_id.as_deref()))
        .filter(move |t| text(&filter.correlation_id, t.correlation_id.as_deref()))
        .filter(|t| filter.created_since_ms.is_none_or(|since| t.created_at_ms >= since))
        .filter(|t| filter.created_until_ms.is_none_or(|until| t.created_at_ms <= until))
        .filter(|t| filter.after.as_ref().is_none_or(|a| (t.created_at_ms, t.id.as_str()) < (a.created_at_ms, &a.id)))
}

/// Rows the filter matches created at or after `since_ms`, at most `at_most`.
pub(super) fn count_tasks(tables: &Tables, params: &CountTasksParams) -> u64 {
    let at_most = usize::try_from(params.at_most).unwrap_or(usize::MAX);
    let recent = matching(tables, &params.filter).take_while(|t| params.since_ms.is_none_or(|s| t.created_at_ms >= s));
    recent.take(at_most).count() as u64
}

/// The rows whose parent is the task, newest first, at most `limit`.
pub(super) fn children(tables: &Tables, params: &ChildrenParams) -> Vec<TaskRow> {
    let mine = |t: &&Task| t.parent_id.as_deref() == Some(params.task_id.as_str());
    tables.newest_first().filter(mine).take(params.limit as usize).map(|t| Ok(t.clone())).collect()
}

/// Non-zero counts per queue and status, for one queue or all.
pub(super) fn stats(tables: &Tables, params: &StatsParams) -> Vec<TaskCount> {
    tables
        .counts()
        .filter(|(queue, _, _)| params.queue.as_deref().is_none_or(|asked| asked == *queue))
        .map(|(queue, status, count)| TaskCount { queue: queue.to_string(), status: Some(status), count })
        .collect()
}

/// Per queue (the one asked for, or every one), its queued task due
/// longest ago ([`Task::due_at_ms`]) and how long ago; a queue with nothing
/// due is absent.
pub(super) fn oldest_due(tables: &Tables, now_ms: i64, params: &StatsParams) -> Vec<QueueAge> {
    let asked = |queue: &&str| params.queue.as_deref().is_none_or(|asked| asked == *queue);
    let queues: BTreeSet<&str> = tables.counts().map(|(queue, _, _)| queue).filter(asked).collect();
    let oldest = |queue: &str| {
        let due = tables.queued_on(queue).filter_map(|(_, _, id)| tables.task(id)).map(|t| (t.due_at_ms(), &t.id));
        due.filter(|(at, _)| *at <= now_ms).min().map(|(at, id)| QueueAge::from_ms(queue, id.clone(), now_ms - at))
    };
    queues.into_iter().filter_map(oldest).collect()
}

/// Queued rows on the queue (delayed ones too), at most `at_most`.
pub(super) fn count_queued(tables: &Tables, params: &CountQueuedParams) -> u64 {
    tables.count(&params.queue, TaskStatus::Queued).min(params.at_most)
}

/// Queued -> canceled now; running -> cancel requested (the first
/// request's time kept); anything else matches nothing.
pub(super) fn cancel(txn: &mut Txn<'_>, params: &CancelParams) -> Option<Task> {
    let task = txn.tables().select(&params.task)?;
    let (id, status) = (task.id.clone(), task.status);
    let now_ms = txn.now_ms;
    match status {
        TaskStatus::Queued => txn.update(&id, |t| {
            t.status = TaskStatus::Canceled;
            t.completed_at_ms = Some(now_ms);
        }),
        TaskStatus::Running => txn.update(&id, |t| {
            t.cancel_requested_at_ms = t.cancel_requested_at_ms.or(Some(now_ms));
        }),
        _ => None,
    }
}

/// Failed or canceled -> queued now, cleared for a fresh start; the
/// attempt count goes on unless reset (max_attempts is not consulted).
pub(super) fn retry(txn: &mut Txn<'_>, params: &RetryParams) -> Option<Task> {
    let task = txn.tables().select(&params.task)?;
    if !matches!(task.status, TaskStatus::Failed | TaskStatus::Canceled) {
        return None;
    }
    let id = task.id.clone();
    let now_ms = txn.now_ms;
    txn.update(&id, |t| {
        if params.reset_attempt {
            t.attempt = 0;
        }
        t.status = TaskStatus::Queued;
        t.error = None;
        t.worker_id = None;
        t.lease_until_ms = None;
        t.cancel_requested_at_ms = None;
        t.completed_at_ms = None;
        t.progress = None;
        t.message = None;
        t.run_at_ms = now_ms;
    })
}

/// Deletes terminal rows completed strictly before `now - older_than_ms`
/// that match the filters, oldest first, at most `limit`; their ids.
pub(super) fn purge(txn: &mut Txn<'_>, filter: &PurgeFilter) -> Vec<String> {
    let now_ms = txn.now_ms;
    let doomed: Vec<String> = purgeable(txn.tables(), now_ms, filter).map(|t| t.id.clone()).collect();
    doomed.into_iter().filter(|id| txn.delete(id).is_some()).collect()
}

/// The terminal rows completed before the filter's cutoff, oldest first,
/// of its status, queue and name, at most its limit: what a purge deletes.
pub(super) fn purgeable<'a>(
    tables: &'a Tables,
    now_ms: i64,
    filter: &'a PurgeFilter,
) -> impl Iterator<Item = &'a Task> {
    let cutoff = now_ms.saturating_sub(filter.older_than_ms);
    let limit = usize::try_from(filter.limit).unwrap_or(0);
    let text = |wanted: &Option<String>, value: &str| wanted.as_deref().is_none_or(|w| w == value);
    tables
        .terminal_oldest_first()
        .take_while(move |(completed_at, _)| *completed_at < cutoff)
        .map(|(_, task)| task)
        .filter(|t| filter.status.is_none_or(|s| s == t.status))
        .filter(move |t| text(&filter.queue, &t.queue) && text(&filter.name, &t.name))
        .take(limit)
}
