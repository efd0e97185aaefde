//! Fan-in: a handler of a task submitted `after` others reads what they
//! ended with, as rows or as typed results, with one call on its context.

use cairnq_core::{Result, Task, TaskDef};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::TaskContext;

impl TaskContext {
    /// The tasks this one was submitted after
    /// ([`SubmitOptions::after`](cairnq_core::SubmitOptions::after)),
    /// whole rows in the order the submit named them: id, name, status,
    /// result and error of each. With the default
    /// [`DependencyFailure::Cancel`](cairnq_core::DependencyFailure) every
    /// one has succeeded by the time the handler runs; with `Run`, look at
    /// each one's status. Empty for a task submitted without dependencies.
    ///
    /// ```no_run
    /// # async fn merge(ctx: cairnq_worker::TaskContext) -> cairnq_core::Result<usize> {
    /// let parts = ctx.dependencies().await?;
    /// let rows: usize = parts.iter().filter_map(|t| t.result.as_ref()).map(|r| r.decode::<usize>()).sum::<Result<_, _>>()?;
    /// # Ok(rows) }
    /// ```
    pub async fn dependencies(&self) -> Result<Vec<Task>> {
        self.client().dependencies(self.task_id()).await
    }

    /// The decoded results of the dependencies of kind `def` (by name), in
    /// the order the submit named them; dependencies of other names are
    /// left out. One that did not succeed is its error
    /// ([`Error::TaskFailed`](cairnq_core::Error::TaskFailed) or
    /// [`Error::TaskCanceled`](cairnq_core::Error::TaskCanceled)), as
    /// [`TaskDef::result_of`] answers.
    ///
    /// ```no_run
    /// # async fn merge(ctx: cairnq_worker::TaskContext) -> cairnq_core::Result<u64> {
    /// use cairnq_core::TaskDef;
    /// const COUNT: TaskDef<String, u64> = TaskDef::new("count_lines");
    /// let total: u64 = ctx.dependency_results(COUNT).await?.into_iter().sum();
    /// # Ok(total) }
    /// ```
    pub async fn dependency_results<P: Serialize, R: DeserializeOwned>(&self, def: TaskDef<P, R>) -> Result<Vec<R>> {
        let rows = self.dependencies().await?;
        rows.into_iter().filter(|t| t.name == def.name()).map(|t| def.result_of(t)).collect()
    }
}
