//! The task filters the tasks page, the bulk actions and `GET /api/tasks`
//! share (named like the CLI's flags), and reading the tasks they match:
//! keyset pages (never an offset), a key lookup, a time range.

use std::collections::BTreeMap;

use cairnq_core::store::CountTasksParams;
use cairnq_core::{CairnQ, Error, ListCursor, ListFilter, Result, Task, TaskStatus};
use serde::Deserialize;

use crate::href;
use crate::time::parse_time;

/// Rows per page unless `limit` says otherwise, and the most a page shows.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;

/// The most rows a count or an "apply to all matching" reads: counts above
/// it show as "10,000+", and an action applies to the first this many.
pub(crate) const MATCH_CAP: usize = 10_000;

/// The filter fields as sent (query string or form); empty means unset.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct TaskQuery {
    pub(crate) status: Option<String>,
    pub(crate) queue: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) root: Option<String>,
    pub(crate) correlation: Option<String>,
    /// Created at or after (UTC `YYYY-MM-DDTHH:MM[:SS]` or epoch ms).
    pub(crate) since: Option<String>,
    /// Created at or before.
    pub(crate) until: Option<String>,
    pub(crate) limit: Option<String>,
    pub(crate) after: Option<String>,
}

/// The filter fields by name, in the order a form or link repeats them.
const FIELDS: [&str; 8] = ["status", "queue", "name", "key", "root", "correlation", "since", "until"];

impl TaskQuery {
    /// From repeated form pairs (the bulk form also carries ids).
    pub(crate) fn from_pairs(pairs: &[(String, String)]) -> Self {
        let get = |field: &str| pairs.iter().find(|(name, _)| name == field).map(|(_, value)| value.clone());
        Self {
            status: get("status"),
            queue: get("queue"),
            name: get("name"),
            key: get("key"),
            root: get("root"),
            correlation: get("correlation"),
            since: get("since"),
            until: get("until"),
            limit: get("limit"),
            after: get("after"),
        }
    }

    fn field(&self, field: &str) -> Option<&str> {
        let value = match field {
            "status" => &self.status,
            "queue" => &self.queue,
            "name" => &self.name,
            "key" => &self.key,
            "root" => &self.root,
            "correlation" => &self.correlation,
            "since" => &self.since,
            "until" => &self.until,
            "limit" => &self.limit,
            "after" => &self.after,
            _ => &None,
        };
        value.as_deref().map(str::trim).filter(|v| !v.is_empty())
    }

    /// The set filter fields (not paging), by name.
    pub(crate) fn set_fields(&self) -> BTreeMap<&'static str, &str> {
        FIELDS.iter().filter_map(|&field| self.field(field).map(|value| (field, value))).collect()
    }

    /// The set filter fields plus the page (`limit`, `after`): what says
    /// which list a user is looking at, so an action on its rows can
    /// return to it.
    pub(crate) fn view_fields(&self) -> Vec<(&'static str, &str)> {
        let paging = ["limit", "after"].into_iter().filter_map(|field| self.field(field).map(|value| (field, value)));
        self.set_fields().into_iter().chain(paging).collect()
    }

    /// The value of a filter field, `""` when unset (for form inputs).
    pub(crate) fn value(&self, field: &str) -> &str {
        self.field(field).unwrap_or("")
    }

    /// Checks every field and turns them into a [`Selection`].
    pub(crate) fn selection(&self) -> Result<Selection> {
        let status = self.field("status").map(str::parse::<TaskStatus>).transpose()?;
        let time = |field: &'static str| {
            self.field(field)
                .map(|text| {
                    parse_time(text).ok_or_else(|| {
                        Error::validation(field, format!("{text:?} is not a time (YYYY-MM-DDTHH:MM UTC, or epoch ms)"))
                    })
                })
                .transpose()
        };
        let (since_ms, until_ms) = (time("since")?, time("until")?);
        let limit = match self.field("limit") {
            None => DEFAULT_LIMIT,
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => return Err(Error::validation("limit", format!("{text:?} is not a number from 1 to {MAX_LIMIT}"))),
            },
        };
        let mut filter = ListFilter::new().limit(limit);
        filter.status = status;
        filter.queue = self.field("queue").map(String::from);
        filter.name = self.field("name").map(String::from);
        filter.root_id = self.field("root").map(String::from);
        filter.correlation_id = self.field("correlation").map(String::from);
        match (self.field("after"), until_ms) {
            (Some(after), _) => filter = filter.after(after.parse::<ListCursor>()?),
            // Rows strictly before (until + 1 ms, "0"): every id sorts above "0".
            (None, Some(until)) => {
                filter = filter.after(format!("{}.0", until.saturating_add(1)).parse::<ListCursor>()?)
            }
            (None, None) => {}
        }
        Ok(Selection { filter, key: self.field("key").map(String::from), since_ms, until_ms })
    }
}

/// A checked filter: what the store filters, and what is filtered here.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    pub(crate) filter: ListFilter,
    /// A business key selects at most one task, read by key.
    key: Option<String>,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
}

/// One page of matching tasks.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Page {
    pub(crate) tasks: Vec<Task>,
    /// Rows of the page that did not decode (a foreign or broken writer).
    pub(crate) undecodable: Vec<cairnq_core::Undecodable>,
    /// Where the next page starts, when there may be one.
    pub(crate) next: Option<ListCursor>,
}

impl Selection {
    /// Whether `task` passes the filters the store did not apply (all of
    /// them, for a task read by key).
    fn admits(&self, task: &Task) -> bool {
        let f = &self.filter;
        let same = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| Some(w) == have);
        f.status.is_none_or(|s| s == task.status)
            && same(&f.queue, Some(&task.queue))
            && same(&f.name, Some(&task.name))
            && same(&f.root_id, task.root_id.as_deref())
            && same(&f.correlation_id, task.correlation_id.as_deref())
            && self.since_ms.is_none_or(|since| task.created_at_ms >= since)
            && self.until_ms.is_none_or(|until| task.created_at_ms <= until)
    }

    /// One page, newest first.
    pub(crate) async fn page(&self, client: &CairnQ) -> Result<Page> {
        if let Some(key) = &self.key {
            let task = client.get_by_key(key).await?.filter(|task| self.admits(task));
            return Ok(Page { tasks: task.into_iter().collect(), ..Page::default() });
        }
        let listed = client.list(&self.filter).await?;
        let mut page = Page { tasks: listed.tasks, undecodable: listed.undecodable, next: listed.next };
        if let Some(since) = self.since_ms
            && page.tasks.last().is_some_and(|oldest| oldest.created_at_ms < since)
        {
            // Newest first: past `since`, every later row is older still.
            page.tasks.retain(|task| task.created_at_ms >= since);
            page.next = None;
        }
        Ok(page)
    }

    /// Every matching task, up to [`MATCH_CAP`], page by page; and whether
    /// more match than that.
    pub(crate) async fn all(&self, client: &CairnQ) -> Result<(Vec<Task>, bool)> {
        let mut selection = self.clone();
        selection.filter.limit = i64::from(MAX_LIMIT);
        let mut tasks = Vec::new();
        loop {
            let page = selection.page(client).await?;
            tasks.extend(page.tasks);
            match page.next {
                Some(next) if tasks.len() < MATCH_CAP => selection.filter = selection.filter.after(next),
                Some(_) => {
                    tasks.truncate(MATCH_CAP);
                    return Ok((tasks, true));
                }
                None => return Ok((tasks, false)),
            }
        }
    }

    /// How many matching tasks are in one of `statuses`, and whether more
    /// than [`MATCH_CAP`] might (the count is then a lower bound): exact
    /// from the store's counts when only queue and status filter, else one
    /// bounded count per status.
    pub(crate) async fn count_in(&self, client: &CairnQ, statuses: &[TaskStatus]) -> Result<(u64, bool)> {
        let f = &self.filter;
        let statuses = statuses.iter().copied().filter(|s| f.status.is_none_or(|wanted| wanted == *s));
        if self.key.is_some() {
            let page = self.page(client).await?;
            let wanted: Vec<TaskStatus> = statuses.collect();
            return Ok((page.tasks.iter().filter(|t| wanted.contains(&t.status)).count() as u64, false));
        }
        let by_counts = self.since_ms.is_none()
            && f.after.is_none()
            && f.name.is_none()
            && f.root_id.is_none()
            && f.correlation_id.is_none();
        if by_counts {
            let stats = client.stats(f.queue.as_deref()).await?;
            let total = statuses.map(|s| stats.values().map(|c| c.get(s)).sum::<u64>()).sum();
            return Ok((total, false));
        }
        let cap = MATCH_CAP as u64;
        let mut total = 0;
        for status in statuses {
            let mut filter = f.clone();
            filter.status = Some(status);
            let params = CountTasksParams::new(filter, cap + 1);
            let params = match self.since_ms {
                Some(since) => params.since_ms(since),
                None => params,
            };
            total += client.count_tasks(&params).await?;
        }
        Ok((total.min(cap), total > cap))
    }

    /// Whether only the filters a purge can apply (queue, status, name) are set.
    pub(crate) fn purgeable(&self) -> bool {
        let f = &self.filter;
        self.key.is_none()
            && self.since_ms.is_none()
            && self.until_ms.is_none()
            && f.root_id.is_none()
            && f.correlation_id.is_none()
            && f.after.is_none()
            && f.status.is_none_or(TaskStatus::is_terminal)
    }
}

/// A query string of the set filter fields plus `extra`, each escaped.
pub(crate) fn query_string(query: &TaskQuery, extra: &[(&str, &str)]) -> String {
    let set = query.set_fields();
    let pairs: Vec<(&str, &str)> =
        set.into_iter().chain(extra.iter().copied().filter(|(_, v)| !v.is_empty())).collect();
    href::query(&pairs)
}
