//! The client's bounded reads for an operator's view (a dashboard, a
//! script): how many tasks a filter matches, how long each queue's oldest
//! due task has waited, the tasks one task submitted, and a task's
//! business key. Each costs a bounded read at any table size
//! on the SQL backends (see the [`Store`](crate::Store) methods behind them).

use super::{CairnQ, check_filter};
use crate::error::{Result, require_text};
use crate::model::{QueueAge, TaskPage};
use crate::store::{ChildrenParams, CountTasksParams, StatsParams, TaskKeyParams};

impl CairnQ {
    /// How many tasks the filter matches (its limit and offset aside),
    /// counting at most `at_most`: a result equal to `at_most` means "at
    /// least that many".
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::store::CountTasksParams;
    /// use cairnq_core::{ListFilter, TaskStatus};
    /// let failed = ListFilter::new().status(TaskStatus::Failed).queue("emails");
    /// let n = client.count_tasks(&CountTasksParams::new(failed, 10_001)).await?;
    /// println!("{}", if n > 10_000 { "10,000+".to_string() } else { n.to_string() });
    /// # Ok(()) }
    /// ```
    pub async fn count_tasks(&self, params: &CountTasksParams) -> Result<u64> {
        check_filter(&params.filter)?;
        if let Some(task) = self.keyed(&params.filter).await? {
            let since = |t: &crate::Task| params.since_ms.is_none_or(|since| t.created_at_ms >= since);
            let counted = task.is_some_and(|t| params.filter.matches(&t) && since(&t));
            return Ok(u64::from(counted).min(params.at_most));
        }
        self.store.count_tasks(params).await
    }

    /// Per queue (every one, or only `queue`), the queued task that has
    /// waited longest and for how long, by the store's clock. A task waits
    /// from the moment it became due, [`Task::due_at_ms`](crate::Task::due_at_ms):
    /// a delayed task is not waiting yet, so a queue whose queued tasks are
    /// all delayed is absent (as is every queue on a store that cannot
    /// tell). A few index seeks per queue on the SQL backends, whatever the
    /// backlog. Every view of queue age (the gauge, the dashboard, `cairnq
    /// top` and `doctor`) reads this one method.
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// for waiting in client.oldest_due(None).await? {
    ///     println!("{}: {} has waited {:?}", waiting.queue, waiting.task_id, waiting.age);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn oldest_due(&self, queue: Option<&str>) -> Result<Vec<QueueAge>> {
        let params = match queue {
            Some(queue) => {
                require_text("queue", queue)?;
                StatsParams::new().queue(queue)
            }
            None => StatsParams::new(),
        };
        self.store.oldest_due(&params).await
    }

    /// The tasks `task_id` submitted, newest first, at most `limit`; empty
    /// for a missing task. A row that does not decode is reported in
    /// [`TaskPage::undecodable`]; the page has no `next`.
    pub async fn children(&self, task_id: &str, limit: u32) -> Result<TaskPage> {
        require_text("task_id", task_id)?;
        let rows = self.store.children(&ChildrenParams::new(task_id).limit(limit)).await?;
        Ok(TaskPage::from_rows(rows))
    }

    /// The business key pointing at the task now, if any (`None` also on a
    /// store that cannot tell).
    pub async fn task_key(&self, task_id: &str) -> Result<Option<String>> {
        require_text("task_id", task_id)?;
        self.store.task_key(&TaskKeyParams::new(task_id)).await
    }
}
