//! Statement arguments in a driver-neutral form, and the queries every
//! backend builds the same way.
//!
//! A protocol statement is picked by [`Sql`] and specialized by flags (its
//! `-- when:` lines); its parameters have the same names in every dialect.
//! So turning a filter, a selector or a claim draw into flags and values is
//! dialect-neutral and written here once; each backend only converts an
//! [`Arg`] to its driver's value (SQLite spells a list as JSON text, Postgres
//! as an array).

use cairnq_protocol::Sql;

use cairnq_core::Json;
use cairnq_core::store::{
    ChildrenParams, CountQueuedParams, CountTasksParams, GetParams, ListFilter, NewTask, ProbeParams, PurgeFilter,
    StatsParams, TaskKeyParams, TaskSelector,
};

/// One argument value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Arg {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (a backend narrows it to the column's width, checked).
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
    /// A list of texts (queues, names, ids).
    Texts(Vec<String>),
    /// A JSON document, verbatim.
    Json(Json),
    /// A list of optional texts (column-wise inserts).
    OptTexts(Vec<Option<String>>),
    /// A list of integers (column-wise inserts).
    Ints(Vec<i64>),
    /// A list of JSON documents (column-wise inserts).
    Jsons(Vec<Json>),
}

impl From<bool> for Arg {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<i32> for Arg {
    fn from(value: i32) -> Self {
        Self::Int(i64::from(value))
    }
}

impl From<f64> for Arg {
    fn from(value: f64) -> Self {
        Self::Real(value)
    }
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Self::Text(value.to_string())
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Self::Text(value.clone())
    }
}

impl From<Vec<String>> for Arg {
    fn from(value: Vec<String>) -> Self {
        Self::Texts(value)
    }
}

impl From<Json> for Arg {
    fn from(value: Json) -> Self {
        Self::Json(value)
    }
}

impl From<&Json> for Arg {
    fn from(value: &Json) -> Self {
        Self::Json(value.clone())
    }
}

impl From<Vec<Option<String>>> for Arg {
    fn from(value: Vec<Option<String>>) -> Self {
        Self::OptTexts(value)
    }
}

impl From<Vec<i64>> for Arg {
    fn from(value: Vec<i64>) -> Self {
        Self::Ints(value)
    }
}

impl From<Vec<Json>> for Arg {
    fn from(value: Vec<Json>) -> Self {
        Self::Jsons(value)
    }
}

impl<T: Into<Arg>> From<Option<T>> for Arg {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Into::into)
    }
}

/// A statement with its optional lines switched on and its named
/// arguments: what a backend runs. Extra arguments are ignored (Postgres
/// statements read the database clock where SQLite ones take `now_ms`).
///
/// ```
/// use cairnq_sql::{Arg, Query};
/// use cairnq_core::store::ListFilter;
/// let query = Query::list(&ListFilter::new().queue("emails"));
/// assert_eq!(query.flags, ["queue"]);
/// assert_eq!(query.get("queue"), Some(&Arg::Text("emails".into())));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Query {
    /// The statement.
    pub sql: Sql,
    /// Flags of the optional lines to switch on.
    pub flags: Vec<&'static str>,
    /// Arguments by parameter name.
    pub args: Vec<(&'static str, Arg)>,
}

impl Query {
    /// `sql` with no flag and no argument yet.
    pub fn new(sql: Sql) -> Self {
        Self { sql, flags: Vec::new(), args: Vec::new() }
    }

    /// Switches the optional lines of `flag` on.
    pub fn flag(mut self, flag: &'static str) -> Self {
        self.flags.push(flag);
        self
    }

    /// Binds `name`.
    pub fn arg(mut self, name: &'static str, value: impl Into<Arg>) -> Self {
        self.args.push((name, value.into()));
        self
    }

    /// The value bound to `name` (the last one, if bound twice).
    pub fn get(&self, name: &str) -> Option<&Arg> {
        self.args.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Switches `flag` on and binds it, when a value is given.
    pub(crate) fn filter(self, flag: &'static str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.flag(flag).arg(flag, value),
            None => self,
        }
    }

    /// Picks the task by id (`by_id`) or through its key (`by_key`).
    pub fn select(self, task: &TaskSelector) -> Self {
        match task {
            TaskSelector::Id(id) => self.flag("by_id").arg("id", id),
            TaskSelector::Key(key) => self.flag("by_key").arg("key", key),
            // A way of picking a task this build does not know picks none:
            // no row has a NULL id.
            _ => self.flag("by_id").arg("id", Arg::Null),
        }
    }

    /// `select_task` for the task asked.
    pub fn get_task(params: &GetParams) -> Self {
        Self::new(Sql::SelectTask).select(&params.task)
    }

    /// `count_tasks_by_queue_status`, for one queue or all; with `counted`
    /// (the database has the trigger-kept counter table of the
    /// `ext_0002_task_counts` migration), `read_task_counts` instead, which
    /// reads a few rows whatever the table's size.
    pub fn stats(params: &StatsParams, counted: bool) -> Self {
        let sql = if counted { Sql::ReadTaskCounts } else { Sql::CountTasksByQueueStatus };
        Self::new(sql).filter("queue", params.queue.as_deref())
    }

    /// `oldest_due_by_queue`, for one queue or all.
    pub fn oldest_due(params: &StatsParams) -> Self {
        match &params.queue {
            Some(queue) => Self::new(Sql::OldestDueByQueue).flag("queue").arg("queue", queue),
            None => Self::new(Sql::OldestDueByQueue).flag("all_queues"),
        }
    }

    /// `count_queued`: the bounded count of one queue's queued rows (from
    /// the counter table with `counted`, as [`Query::stats`]).
    pub fn count_queued(params: &CountQueuedParams, counted: bool) -> Self {
        let at_most = i64::try_from(params.at_most).unwrap_or(i64::MAX);
        let sql = if counted { Sql::ReadQueuedCount } else { Sql::CountQueued };
        Self::new(sql).arg("queue", &params.queue).arg("at_most", at_most)
    }

    /// The extension table whose presence makes [`Query::stats`] and
    /// [`Query::count_queued`] `counted` (a database another SDK installed
    /// may lack it).
    pub const COUNTS_TABLE: &'static str = "cairnq_ext_task_counts";

    /// The queued index of `ext_0007_limit_queue_index` (which comes after
    /// the limits table of `ext_0006_limits`): a claim enforces limits only
    /// where it exists (see [`LimitMode`](crate::LimitMode)).
    pub const LIMITS_INDEX: &'static str = "cairnq_ext_tasks_limit_queued_idx";

    /// `probe_claimable` for the queues and names asked.
    pub fn probe(params: &ProbeParams) -> Self {
        Self::new(Sql::ProbeClaimable).scope(&params.queues, params.names.as_deref())
    }

    /// `count_tasks` for `params`.
    pub fn count_tasks(params: &CountTasksParams) -> Self {
        let at_most = i64::try_from(params.at_most).unwrap_or(i64::MAX);
        let since = match (params.since_ms, params.filter.created_since_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        Self::new(Sql::CountTasks)
            .filters(&params.filter)
            .created(since, params.filter.created_until_ms)
            .cursor(&params.filter)
            .arg("at_most", at_most)
    }

    /// `list_children` for `params`.
    pub fn children(params: &ChildrenParams) -> Self {
        Self::new(Sql::ListChildren).arg("task_id", &params.task_id).arg("limit", i64::from(params.limit))
    }

    /// `select_task_key` for `params`.
    pub fn task_key(params: &TaskKeyParams) -> Self {
        Self::new(Sql::SelectTaskKey).arg("task_id", &params.task_id)
    }

    /// One flag and argument per column filter of `filter`.
    pub(crate) fn filters(self, filter: &ListFilter) -> Self {
        self.filter("status", filter.status.map(|s| s.as_str()))
            .filter("queue", filter.queue.as_deref())
            .filter("name", filter.name.as_deref())
            .filter("root_id", filter.root_id.as_deref())
            .filter("correlation_id", filter.correlation_id.as_deref())
    }

    /// The created range (`created`), when either end is set; an open end
    /// is the end of what the column holds, so one flag serves both.
    pub(crate) fn created(self, since_ms: Option<i64>, until_ms: Option<i64>) -> Self {
        if since_ms.is_none() && until_ms.is_none() {
            return self;
        }
        self.flag("created").arg("since_ms", since_ms.unwrap_or(i64::MIN)).arg("until_ms", until_ms.unwrap_or(i64::MAX))
    }

    /// The keyset cursor of `filter`, when it has one.
    pub(crate) fn cursor(self, filter: &ListFilter) -> Self {
        match &filter.after {
            Some(after) => self.flag("after").arg("after_ms", after.created_at_ms).arg("after_id", &after.id),
            None => self,
        }
    }

    /// `insert_task` for one task (the row the dialect's statement writes).
    pub fn insert(task: &NewTask) -> Self {
        Self::new(Sql::InsertTask)
            .arg("id", &task.id)
            .arg("name", &task.name)
            .arg("queue", &task.queue)
            .arg("payload", &task.payload)
            .arg("metadata", &task.metadata)
            .arg("max_attempts", task.max_attempts)
            .arg("priority", task.priority)
            .arg("delay_ms", task.delay_ms)
            .arg("parent_id", task.parent_id.clone())
            .arg("root_id", &task.root_id)
            .arg("correlation_id", task.correlation_id.clone())
    }

    /// `purge_tasks` for `filter` (`any_status` spells the terminal set as
    /// the partial purge index does).
    pub fn purge(filter: &PurgeFilter) -> Self {
        Self::purge_scope(Sql::PurgeTasks, filter)
    }

    /// `list_purgeable` for `filter`: the rows [`Query::purge`] would
    /// delete, read (SQLite binds `now_ms` as for the purge).
    pub fn purgeable(filter: &PurgeFilter) -> Self {
        Self::purge_scope(Sql::ListPurgeable, filter)
    }

    /// The rows of `filter` in a statement that picks them as `purge_tasks` does.
    fn purge_scope(sql: Sql, filter: &PurgeFilter) -> Self {
        let query = Self::new(sql).arg("older_than_ms", filter.older_than_ms).arg("limit", filter.limit);
        let query = match filter.status {
            Some(status) => query.flag("status").arg("status", status.as_str()),
            None => query.flag("any_status"),
        };
        query.filter("queue", filter.queue.as_deref()).filter("name", filter.name.as_deref())
    }

    /// The queue and name filter of a probe or a claim draw: equality for
    /// one value (so the claim indexes are read in order), a list for
    /// several (an empty list matches nothing), no name filter for `None`.
    pub fn scope(self, queues: &[String], names: Option<&[String]>) -> Self {
        let query = match queues {
            [one] => self.flag("one_queue").arg("queue", one),
            many => self.flag("many_queues").arg("queues", many.to_vec()),
        };
        query.names(names)
    }

    /// The name filter of [`scope`](Self::scope) alone.
    pub fn names(self, names: Option<&[String]>) -> Self {
        match names {
            None => self,
            Some([one]) => self.flag("one_name").arg("name", one),
            Some(many) => self.flag("many_names").arg("names", many.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairnq_core::TaskStatus;

    #[test]
    fn filters_become_flags_only_when_given() {
        let all = Query::list(&ListFilter::new());
        assert!(all.flags.is_empty());
        let some = Query::list(&ListFilter::new().status(TaskStatus::Failed).name("x"));
        assert_eq!(some.flags, ["status", "name"]);
        let purge = Query::purge(&PurgeFilter::new().queue("q"));
        assert_eq!(purge.flags, ["any_status", "queue"]);
    }

    #[test]
    fn one_value_is_equality_and_several_a_list() {
        let one = Query::new(Sql::ProbeClaimable).scope(&["a".into()], Some(&["n".into()]));
        assert_eq!(one.flags, ["one_queue", "one_name"]);
        let many = Query::new(Sql::ProbeClaimable).scope(&["a".into(), "b".into()], Some(&[]));
        assert_eq!(many.flags, ["many_queues", "many_names"]);
        assert_eq!(many.get("names"), Some(&Arg::Texts(vec![])));
    }
}
