//! Cancel or retry every task a filter matches, and the preview of either,
//! with one rule for every caller (the CLI, a dashboard, a script): which
//! statuses a filter may take, what it takes when it names none, how many
//! at most, and that each task moves through the one-task operation, so a
//! task that changed state between the read and the write is left alone
//! rather than moved from a state the action does not take.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use futures::{StreamExt, TryStreamExt};

use crate::client::{CairnQ, check_filter};
use crate::error::{Error, Result};
use crate::model::{Task, TaskPage, TaskStatus};
use crate::store::{CountTasksParams, ListFilter, PurgeFilter};

/// Tasks are read in pages of this many.
const PAGE: u32 = 500;

/// One-task operations of one bulk action in flight at once, so a store
/// that commits in groups writes them in few transactions.
const IN_FLIGHT: usize = 16;

/// What a bulk cancel or retry did, or in a dry run would do.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct BulkOutcome {
    /// The tasks changed, as they are now; in a dry run, the tasks that
    /// would change, as they were read.
    pub tasks: Vec<Task>,
    /// Tasks that matched but changed state before their turn, left alone
    /// (never set in a dry run).
    pub skipped: Vec<String>,
    /// More tasks matched than the cap: only the first `cap` were taken.
    /// Run again for the rest.
    pub capped: bool,
}

/// Which one-task operation a bulk action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Cancel,
    Retry { reset_attempt: bool },
}

impl Action {
    /// The statuses the action moves a task out of.
    fn movable(self) -> &'static [TaskStatus] {
        match self {
            Self::Cancel => &[TaskStatus::Queued, TaskStatus::Running],
            Self::Retry { .. } => &[TaskStatus::Failed, TaskStatus::Canceled],
        }
    }

    /// The statuses a filter without a status takes: cancel every live
    /// task; retry the failed ones (a canceled task was stopped on purpose,
    /// so retrying it takes asking for it by status).
    fn default_statuses(self) -> &'static [TaskStatus] {
        match self {
            Self::Cancel => &[TaskStatus::Queued, TaskStatus::Running],
            Self::Retry { .. } => &[TaskStatus::Failed],
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Cancel => "canceled",
            Self::Retry { .. } => "retried",
        }
    }

    async fn apply(self, client: &CairnQ, id: &str) -> Result<Option<Task>> {
        match self {
            Self::Cancel => client.cancel(id).await,
            Self::Retry { reset_attempt: true } => client.retry(id).reset_attempt().await,
            Self::Retry { reset_attempt: false } => client.retry(id).await,
        }
    }
}

/// A bulk cancel or retry under construction; `.await` it. Built by
/// [`CairnQ::cancel_matching`] and [`CairnQ::retry_matching`].
#[must_use = "a bulk action does nothing until it is awaited"]
pub struct BulkAction<'a> {
    client: &'a CairnQ,
    filter: ListFilter,
    cap: usize,
    action: Action,
    dry_run: bool,
}

impl<'a> BulkAction<'a> {
    /// Reads the tasks the action would take and changes nothing: the
    /// outcome's `tasks` are the preview, `capped` whether more matched.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// For a retry, starts each task's attempt count over (see
    /// [`Retry::reset_attempt`](crate::Retry::reset_attempt)); a cancel
    /// ignores it.
    pub fn reset_attempt(mut self) -> Self {
        if let Action::Retry { .. } = self.action {
            self.action = Action::Retry { reset_attempt: true };
        }
        self
    }

    /// How many tasks the action would take, counted by the store without
    /// reading them (a preview's number, where a [`dry_run`](Self::dry_run)
    /// reads every row), at most `cap + 1`: more than `cap` says a run takes
    /// only the first `cap`. Refused as the action itself would be.
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::{ListFilter, TaskStatus};
    /// let failed = ListFilter::new().status(TaskStatus::Failed);
    /// let n = client.retry_matching(&failed, 10_000).count().await?;
    /// println!("{}", if n > 10_000 { "10,000+".to_string() } else { n.to_string() });
    /// # Ok(()) }
    /// ```
    pub async fn count(self) -> Result<u64> {
        let statuses = self.checked()?;
        let at_most = u64::try_from(self.cap).unwrap_or(u64::MAX).saturating_add(1);
        let mut total = 0;
        for status in statuses {
            let mut filter = self.filter.clone();
            filter.status = Some(status);
            filter.offset = 0;
            total += self.client.count_tasks(&CountTasksParams::new(filter, at_most - total)).await?;
            if total >= at_most {
                break;
            }
        }
        Ok(total)
    }

    /// The statuses the action takes, refusing a filter or cap it cannot run with.
    fn checked(&self) -> Result<Vec<TaskStatus>> {
        let statuses = statuses(&self.filter, self.action)?;
        if self.cap == 0 {
            return Err(Error::validation("cap", "must be at least 1"));
        }
        Ok(statuses)
    }

    async fn run(self) -> Result<BulkOutcome> {
        let statuses = self.checked()?;
        let (matched, capped) = self.matching(&statuses).await?;
        if self.dry_run {
            return Ok(BulkOutcome { tasks: matched, skipped: Vec::new(), capped });
        }
        let (client, action) = (self.client, self.action);
        let applied: Vec<(String, Option<Task>)> = futures::stream::iter(matched)
            .map(|task| async move { action.apply(client, &task.id).await.map(|changed| (task.id, changed)) })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut outcome = BulkOutcome { capped, ..BulkOutcome::default() };
        for (id, changed) in applied {
            match changed {
                Some(changed) => outcome.tasks.push(changed),
                None => outcome.skipped.push(id),
            }
        }
        Ok(outcome)
    }

    /// The first `cap` tasks matching in `statuses` (each status newest
    /// first), and whether more match.
    async fn matching(&self, statuses: &[TaskStatus]) -> Result<(Vec<Task>, bool)> {
        let mut found = Vec::new();
        for status in statuses {
            let mut filter = self.filter.clone().limit(PAGE);
            filter.status = Some(*status);
            filter.offset = 0;
            loop {
                let page = self.client.list(&filter).await?;
                found.extend(page.tasks);
                if found.len() > self.cap {
                    found.truncate(self.cap);
                    return Ok((found, true));
                }
                match page.next {
                    Some(next) => filter = filter.after(next),
                    None => break,
                }
            }
        }
        Ok((found, false))
    }
}

impl<'a> IntoFuture for BulkAction<'a> {
    type Output = Result<BulkOutcome>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// The statuses `filter` takes for `action`: its own when the action can
/// move it, else the action's default; refused for a filter that sets
/// nothing (say a status to mean every task of it) or a status the action
/// cannot move.
fn statuses(filter: &ListFilter, action: Action) -> Result<Vec<TaskStatus>> {
    check_filter(filter)?;
    let narrowed = filter.status.is_some()
        || filter.queue.is_some()
        || filter.name.is_some()
        || filter.root_id.is_some()
        || filter.correlation_id.is_some()
        || filter.key.is_some()
        || filter.created_since_ms.is_some()
        || filter.created_until_ms.is_some()
        || filter.after.is_some();
    if !narrowed {
        return Err(Error::validation(
            "filter",
            format!("sets nothing: say which tasks are to be {} (a status, for every task of it)", action.verb()),
        ));
    }
    match filter.status {
        Some(status) if !action.movable().contains(&status) => Err(Error::validation(
            "status",
            format!(
                "{status}: only {} tasks can be {}",
                action.movable().iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" or "),
                action.verb()
            ),
        )),
        Some(status) => Ok(vec![status]),
        None => Ok(action.default_statuses().to_vec()),
    }
}

impl CairnQ {
    /// Cancels every task `filter` matches, at most `cap` of them; add
    /// [`dry_run`](BulkAction::dry_run) to read them and change nothing.
    ///
    /// The rule every bulk action shares: the filter's status, when set,
    /// must be queued or running (else `ValidationError`); without one it
    /// takes queued and running tasks. A filter that sets nothing is
    /// refused. Its limit and offset are not used: the tasks are read in
    /// keyset pages, each status newest first, and the first `cap` taken
    /// ([`BulkOutcome::capped`] says more matched). Each is canceled as
    /// [`cancel`](Self::cancel) would, a few at once (the outcome keeps
    /// the order read), so a task that finished meanwhile is left alone
    /// ([`BulkOutcome::skipped`]). [`count`](BulkAction::count) says how
    /// many it would take without reading them.
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::ListFilter;
    /// let images = ListFilter::new().queue("images");
    /// let preview = client.cancel_matching(&images, 10_000).dry_run().await?;
    /// println!("would cancel {} task(s)", preview.tasks.len());
    /// let done = client.cancel_matching(&images, 10_000).await?;
    /// println!("canceled {}, {} finished first", done.tasks.len(), done.skipped.len());
    /// # Ok(()) }
    /// ```
    pub fn cancel_matching(&self, filter: &ListFilter, cap: usize) -> BulkAction<'_> {
        BulkAction { client: self, filter: filter.clone(), cap, action: Action::Cancel, dry_run: false }
    }

    /// Retries every task `filter` matches, at most `cap` of them, by the
    /// rule of [`cancel_matching`](Self::cancel_matching) with retry's
    /// statuses: the filter's status, when set, must be failed or canceled;
    /// without one it takes failed tasks. Add
    /// [`reset_attempt`](BulkAction::reset_attempt) to start each attempt
    /// count over, [`dry_run`](BulkAction::dry_run) to change nothing.
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::ListFilter;
    /// let resize = ListFilter::new().queue("images").name("resize");
    /// let retried = client.retry_matching(&resize, 10_000).reset_attempt().await?;
    /// assert!(retried.tasks.iter().all(|t| t.attempt == 0));
    /// # Ok(()) }
    /// ```
    pub fn retry_matching(&self, filter: &ListFilter, cap: usize) -> BulkAction<'_> {
        let action = Action::Retry { reset_attempt: false };
        BulkAction { client: self, filter: filter.clone(), cap, action, dry_run: false }
    }

    /// The tasks [`purge`](Self::purge) would delete now with `filter`
    /// (oldest completed first, at most its limit), deleting nothing: a
    /// purge's preview, by the purge's own rule.
    /// A row that does not decode is reported in [`TaskPage::undecodable`].
    pub async fn purgeable(&self, filter: &PurgeFilter) -> Result<TaskPage> {
        filter.validate()?;
        Ok(TaskPage::from_rows(self.store.purgeable(filter).await?))
    }
}
