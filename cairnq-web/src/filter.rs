//! The task filters the tasks page, the bulk actions and `GET /api/tasks`
//! share (named like the CLI's flags), as form and query fields, and how
//! they become the library's [`ListFilter`], which reads them all (keyset
//! pages, never an offset; a key; a created range).

use std::collections::BTreeMap;

use cairnq_core::{Error, ListCursor, ListFilter, Result, TaskStatus};
use serde::Deserialize;

use crate::href;
use crate::time::parse_time;

/// Rows per page unless `limit` says otherwise, and the most a page shows.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;

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

    /// Checks every field and turns them into the library's filter (the
    /// key, the created range and the page included: the library reads
    /// and checks them all).
    pub(crate) fn filter(&self) -> Result<ListFilter> {
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
        let (since, until) = (time("since")?, time("until")?);
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
        filter.key = self.field("key").map(String::from);
        filter.root_id = self.field("root").map(String::from);
        filter.correlation_id = self.field("correlation").map(String::from);
        if let Some(since) = since {
            filter = filter.created_since(since.into());
        }
        if let Some(until) = until {
            filter = filter.created_until(until.into());
        }
        if let Some(after) = self.field("after") {
            filter = filter.after(after.parse::<ListCursor>()?);
        }
        Ok(filter)
    }
}

/// A query string of the set filter fields plus `extra`, each escaped.
pub(crate) fn query_string(query: &TaskQuery, extra: &[(&str, &str)]) -> String {
    let set = query.set_fields();
    let pairs: Vec<(&str, &str)> =
        set.into_iter().chain(extra.iter().copied().filter(|(_, v)| !v.is_empty())).collect();
    href::query(&pairs)
}
