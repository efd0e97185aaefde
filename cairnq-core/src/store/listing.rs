//! The default bodies of the seam's reads beyond the protocol
//! ([`Store::count_tasks`], [`Store::children`], [`Store::purgeable`]) for
//! a store without statements of its own: correct on any store, built on
//! [`Store::list`] keyset pages. A store with SQL answers each in one
//! statement instead.

use crate::clock::{Clock, SystemClock};
use crate::error::Result;
use crate::model::{ListCursor, Task, TaskStatus};
use crate::store::{
    ChildrenParams, CountTasksParams, GetParams, ListFilter, PurgeFilter, Store, TaskRow, TaskSelector,
};

/// Rows read per page.
const PAGE: u32 = 500;

/// Calls `visit` with every row `filter` matches, newest first, page by
/// page, until it returns `false` or the rows run out. A row that did not
/// decode has no place in list order, so rows after a page's last decoded
/// row come again on the next page (which starts after that row); they are
/// visited once, there.
async fn each_listed<S, F>(store: &S, filter: &ListFilter, mut visit: F) -> Result<()>
where
    S: Store + ?Sized,
    F: FnMut(&TaskRow) -> bool + Send,
{
    let mut filter = filter.clone().limit(PAGE);
    filter.offset = 0;
    loop {
        let rows = store.list(&filter).await?;
        let full = rows.len() >= PAGE as usize;
        let upto = if full { rows.iter().rposition(Result::is_ok).map_or(0, |at| at + 1) } else { rows.len() };
        for row in &rows[..upto] {
            if !visit(row) {
                return Ok(());
            }
        }
        match rows[..upto].iter().rev().find_map(|row| row.as_ref().ok()) {
            Some(last) if full => filter.after = Some(ListCursor::of(last)),
            _ => return Ok(()),
        }
    }
}

/// [`Store::count_tasks`] by listing.
pub(super) async fn count<S: Store + ?Sized>(store: &S, params: &CountTasksParams) -> Result<u64> {
    let mut counted = 0u64;
    if params.at_most == 0 {
        return Ok(0);
    }
    each_listed(store, &params.filter, |row| {
        // Newest first: past `since`, every later row is older still.
        if let (Ok(task), Some(since)) = (row, params.since_ms)
            && task.created_at_ms < since
        {
            return false;
        }
        counted += 1;
        counted < params.at_most
    })
    .await?;
    Ok(counted)
}

/// [`Store::children`] by listing the parent's chain.
pub(super) async fn children<S: Store + ?Sized>(store: &S, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
    let parent = store.get(&GetParams::new(TaskSelector::Id(params.task_id.clone()))).await?;
    let Some(root) = parent.and_then(|task| task.root_id) else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    if params.limit == 0 {
        return Ok(found);
    }
    each_listed(store, &ListFilter::new().root_id(root), |row| {
        if let Ok(task) = row
            && task.parent_id.as_deref() == Some(params.task_id.as_str())
        {
            found.push(Ok(task.clone()));
        }
        found.len() < params.limit as usize
    })
    .await?;
    Ok(found)
}

/// [`Store::purgeable`] by listing each terminal status the filter takes.
pub(super) async fn purgeable<S: Store + ?Sized>(store: &S, filter: &PurgeFilter) -> Result<Vec<TaskRow>> {
    let cutoff = SystemClock.now_ms().saturating_sub(filter.older_than_ms);
    let statuses: Vec<TaskStatus> = match filter.status {
        Some(status) => vec![status],
        None => TaskStatus::ALL.into_iter().filter(|s| s.is_terminal()).collect(),
    };
    let limit = usize::try_from(filter.limit).unwrap_or(0);
    let mut doomed: Vec<Task> = Vec::new();
    // Kept to the `limit` oldest as it goes, so memory is bounded by the
    // limit, not by the table.
    let keep_oldest = |doomed: &mut Vec<Task>| {
        doomed.sort_by_key(|task| task.completed_at_ms);
        doomed.truncate(limit);
    };
    for status in statuses {
        let mut listed = ListFilter::new().status(status);
        listed.queue.clone_from(&filter.queue);
        listed.name.clone_from(&filter.name);
        each_listed(store, &listed, |row| {
            if let Ok(task) = row
                && task.completed_at_ms.is_some_and(|at| at < cutoff)
            {
                doomed.push(task.clone());
                if doomed.len() >= limit.saturating_mul(2).max(PAGE as usize) {
                    keep_oldest(&mut doomed);
                }
            }
            true
        })
        .await?;
    }
    keep_oldest(&mut doomed);
    Ok(doomed.into_iter().map(Ok).collect())
}
