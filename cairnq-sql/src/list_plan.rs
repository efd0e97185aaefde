//! How a filtered list reads, written once for every SQL backend: walking
//! the list-order index (`list_tasks_in_order`: cheap while matches are
//! common, a page fills after a few entries) or through the filters' own
//! indexes and a sort of the matches (`list_tasks`: cheap while they are
//! few). A planner that cannot see a value's frequency (a pooled
//! connection's generic plan; SQLite without value statistics) picks wrong
//! either way at a million rows, so the backend first asks how many rows
//! match ([`ListProbe`]) and then runs the statement that suits
//! ([`Query::list_planned`]).
//!
//! A walk past the last match reads every older row, so a page with a
//! cursor walks only when the matches are known (from the counter table)
//! to be too many to sort; no extra index on `cairnq_tasks` is kept for
//! this (one in `(status, created_at_ms)` order cost the SQLite burn-down
//! 7-10%: BENCHMARKS.md, issue 16).

use cairnq_protocol::Sql;

use super::query::Query;
use cairnq_core::store::ListFilter;

/// The fewest matching rows at which a list walks the list-order index
/// rather than sorting its matches: below it a sort costs at most this
/// many rows.
pub const LIST_SORT_AT_MOST: u64 = 10_000;

/// With a cursor, the fewest matching rows (counted exactly) at which a
/// list walks: below it the page sorts those matches older than the cursor
/// (a bounded cost), since a walk past the last match would read every
/// older row.
pub const LIST_CURSOR_SORT_AT_MOST: u64 = 60_000;

/// How many rows a list filter matches, as a [`ListProbe`] counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Matching {
    /// This many, exactly.
    Exactly(u64),
    /// At least this many (a bounded count reached its bound).
    AtLeast(u64),
}

/// The read that decides how a filtered list reads: how many rows the
/// filter matches (its cursor left out), exactly from the counter table
/// when it filters only by status and queue, else a bounded count through
/// the filters' indexes. A created range is left out of the counter
/// table's answer (an upper bound then): the walk it may pick stops at
/// the range's end either way.
#[derive(Debug, Clone, PartialEq)]
pub struct ListProbe {
    /// The count to run; its one row holds one integer.
    pub query: Query,
    exact: bool,
}

impl ListProbe {
    /// The probe of `filter`; `counted`: the database has the counter
    /// table (ext_0002), `ordered`: the list-order index (ext_0003). `None`
    /// when there is nothing to decide (no column filter, or no index to
    /// walk).
    pub fn new(filter: &ListFilter, counted: bool, ordered: bool) -> Option<Self> {
        if !ordered || !has_filters(filter) {
            return None;
        }
        let by_counts = filter.name.is_none() && filter.root_id.is_none() && filter.correlation_id.is_none();
        Some(if counted && by_counts {
            let query = Query::new(Sql::ReadMatchingCount)
                .filter("status", filter.status.map(|s| s.as_str()))
                .filter("queue", filter.queue.as_deref());
            Self { query, exact: true }
        } else {
            let at_most = i64::try_from(LIST_SORT_AT_MOST).unwrap_or(i64::MAX);
            let query = Query::new(Sql::CountTasks)
                .filters(filter)
                .created(filter.created_since_ms, filter.created_until_ms)
                .arg("at_most", at_most);
            Self { query, exact: false }
        })
    }

    /// What the probe's answer `count` says.
    pub fn matching(&self, count: i64) -> Matching {
        let count = u64::try_from(count).unwrap_or(0);
        if self.exact || count < LIST_SORT_AT_MOST { Matching::Exactly(count) } else { Matching::AtLeast(count) }
    }
}

impl Query {
    /// One page of `filter` without a probe: through the filters' own
    /// indexes (`list_tasks`) when it filters, in list order
    /// (`list_tasks_in_order`) when it does not. Correct either way; a
    /// filter most rows match is faster through [`Query::list_planned`].
    pub fn list(filter: &ListFilter) -> Self {
        Self::list_planned(filter, None)
    }

    /// One page of `filter`, given what its [`ListProbe`] found: walking
    /// the list-order index when nothing is filtered or at least
    /// [`LIST_SORT_AT_MOST`] rows match (with a cursor: at least
    /// [`LIST_CURSOR_SORT_AT_MOST`], when known exactly), else through the
    /// filters' indexes and a sort of their matches.
    pub fn list_planned(filter: &ListFilter, matching: Option<Matching>) -> Self {
        let walk_from = if filter.after.is_some() { LIST_CURSOR_SORT_AT_MOST } else { LIST_SORT_AT_MOST };
        let walk = match matching {
            None => !has_filters(filter),
            Some(Matching::AtLeast(_)) => true,
            Some(Matching::Exactly(n)) => n >= walk_from,
        };
        let sql = if walk { Sql::ListTasksInOrder } else { Sql::ListTasks };
        Self::new(sql)
            .arg("limit", filter.limit)
            .arg("offset", filter.offset)
            .filters(filter)
            .created(filter.created_since_ms, filter.created_until_ms)
            .cursor(filter)
    }

    /// The extension index [`Query::list_planned`] walks (ext_0003); a
    /// database another SDK installed may lack it.
    pub const ORDER_INDEX: &'static str = "cairnq_ext_tasks_created_idx";
}

/// Whether `filter` filters by any column (not only a cursor or a created
/// range: a range bounds the walk of the list-order index, which is then
/// the right plan).
fn has_filters(filter: &ListFilter) -> bool {
    filter.status.is_some()
        || filter.queue.is_some()
        || filter.name.is_some()
        || filter.root_id.is_some()
        || filter.correlation_id.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arg;
    use cairnq_core::{ListCursor, TaskStatus};

    #[test]
    fn a_list_walks_in_order_unless_few_rows_match_its_filters() {
        let failed = ListFilter::new().status(TaskStatus::Failed);
        assert_eq!(Query::list(&ListFilter::new()).sql, Sql::ListTasksInOrder, "nothing to sort by");
        assert_eq!(Query::list(&failed).sql, Sql::ListTasks);
        let few = Matching::Exactly(LIST_SORT_AT_MOST - 1);
        assert_eq!(Query::list_planned(&failed, Some(Matching::AtLeast(LIST_SORT_AT_MOST))).sql, Sql::ListTasksInOrder);
        assert_eq!(Query::list_planned(&failed, Some(few)).sql, Sql::ListTasks);
        let deep = failed.clone().after("1.task_x".parse::<ListCursor>().expect("a cursor"));
        let many = Matching::Exactly(LIST_CURSOR_SORT_AT_MOST - 1);
        assert_eq!(Query::list_planned(&deep, Some(many)).sql, Sql::ListTasks, "a cursor sorts a known few");
        let more = Matching::Exactly(LIST_CURSOR_SORT_AT_MOST);
        assert_eq!(Query::list_planned(&deep, Some(more)).sql, Sql::ListTasksInOrder);
        assert_eq!(Query::list_planned(&deep, Some(Matching::AtLeast(10))).sql, Sql::ListTasksInOrder);
    }

    #[test]
    fn a_created_range_alone_walks_and_bounds_the_walk() {
        let recent = ListFilter::new().created_since(std::time::UNIX_EPOCH + std::time::Duration::from_secs(60));
        let query = Query::list(&recent);
        assert_eq!(query.sql, Sql::ListTasksInOrder, "a range is a range of the list-order index");
        assert_eq!(query.flags, ["created"]);
        assert_eq!(
            (query.get("since_ms"), query.get("until_ms")),
            (Some(&Arg::Int(60_000)), Some(&Arg::Int(i64::MAX)))
        );
        assert_eq!(ListProbe::new(&recent, true, true), None, "nothing to decide");
    }

    #[test]
    fn the_probe_counts_exactly_from_the_counter_table_or_bounded_through_indexes() {
        let failed = ListFilter::new().status(TaskStatus::Failed);
        let by_counts = ListProbe::new(&failed.clone().queue("q"), true, true).expect("a probe");
        assert_eq!(by_counts.query.sql, Sql::ReadMatchingCount, "status and queue: the counter table");
        assert_eq!(by_counts.matching(50_000), Matching::Exactly(50_000));
        let by_name = ListProbe::new(&failed.clone().name("n"), true, true).expect("a probe");
        assert_eq!(by_name.query.sql, Sql::CountTasks, "a name: a bounded count");
        let bound = i64::try_from(LIST_SORT_AT_MOST).unwrap_or(i64::MAX);
        assert_eq!(by_name.matching(bound), Matching::AtLeast(LIST_SORT_AT_MOST));
        assert_eq!(ListProbe::new(&failed, false, true).map(|p| p.query.sql), Some(Sql::CountTasks));
        assert_eq!(ListProbe::new(&failed, true, false), None, "no order index: nothing to walk");
        assert_eq!(ListProbe::new(&ListFilter::new(), true, true), None);
    }
}
