//! Task dependencies on the client: the check of a submit's `after` list,
//! and the reads a waiting task's viewers and its handler need. The store
//! does the rest (see [`DependencyStore`]).

use crate::client::{CairnQ, SubmitOptions, by_id};
use crate::dependencies::{DependencyFailure, TaskWait};
use crate::error::{Error, Result, require_non_empty, require_text};
use crate::model::{Task, Undecodable};
use crate::store::{DependenciesParams, DependencyStore, NewTask, SubmitAfterParams, TaskWaitsParams};

impl SubmitOptions {
    /// Makes the task wait until every task in `ids` has ended (each call
    /// adds to the list; an id given twice counts once). While it waits it
    /// is queued but no worker of any SDK claims it (`cairnq get` says
    /// "waiting for 2 of 3 tasks"); in the transaction that settles the
    /// last of them it becomes due (never before its own
    /// [`delay`](Self::delay)). Its handler reads their rows with
    /// `ctx.dependencies()`. A dependency already ended counts at once; an
    /// id that names no task refuses the submit with
    /// [`Error::Validation`] and writes nothing. For a dependency that
    /// ends failed or canceled, see
    /// [`on_dependency_failure`](Self::on_dependency_failure). Needs a
    /// store with dependencies (SQLite, Postgres, memory).
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// let fetch = client.submit("fetch", &"a.csv").await?;
    /// let parse = client.submit("parse", &"b.csv").await?;
    /// let merge = client.submit("merge", &()).after([&fetch.id, &parse.id]).await?;
    /// # Ok(()) }
    /// ```
    pub fn after(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.after.extend(ids.into_iter().map(Into::into));
        self
    }

    /// What a dependency ending failed or canceled does to this task:
    /// [`DependencyFailure::Cancel`] (the default) cancels it at once with
    /// an envelope naming the dependency and how it ended;
    /// [`DependencyFailure::Run`] runs it anyway once all have ended.
    pub fn on_dependency_failure(mut self, policy: DependencyFailure) -> Self {
        self.on_dependency_failure = policy;
        self
    }

    /// The dependency part of a submit of `task`: `None` without `after`;
    /// else the ids checked (text, not empty) and each kept once, in the
    /// order first given.
    pub(crate) fn after_params(&self, task: &NewTask) -> Result<Option<SubmitAfterParams>> {
        if self.after.is_empty() {
            return Ok(None);
        }
        let mut ids: Vec<String> = Vec::with_capacity(self.after.len());
        for id in &self.after {
            require_non_empty("after", id)?;
            require_text("after", id)?;
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        Ok(Some(SubmitAfterParams::new(task.clone(), ids).on_failure(self.on_dependency_failure)))
    }
}

impl CairnQ {
    /// The tasks `task_id` was submitted after, whole rows, in the order its
    /// submit named them: what a fan-in handler reads its inputs from (a
    /// purged dependency is no longer listed). Empty for a task submitted
    /// without dependencies.
    ///
    /// Errors: [`Error::UnsupportedBackend`] on a store without
    /// dependencies; [`Error::Undecodable`] for a row another writer left
    /// that does not decode.
    pub async fn dependencies(&self, task_id: &str) -> Result<Vec<Task>> {
        by_id(task_id)?;
        let rows = self.dependency_store("dependencies")?.dependencies(&DependenciesParams::new(task_id)).await?;
        rows.into_iter().map(|row| row.map_err(Undecodable::into_error)).collect()
    }

    /// How far each of these tasks is along its wait ("waiting for 2 of 3
    /// tasks"): one [`TaskWait`] per task submitted with dependencies, none
    /// for the others, and none at all on a store without dependencies
    /// (so viewers can always ask).
    pub async fn task_waits(&self, task_ids: &[String]) -> Result<Vec<TaskWait>> {
        for id in task_ids {
            require_text("task_id", id)?;
        }
        match self.store().dependency_store() {
            Some(store) if !task_ids.is_empty() => store.task_waits(&TaskWaitsParams::new(task_ids.to_vec())).await,
            _ => Ok(Vec::new()),
        }
    }

    /// The wait of one task (see [`task_waits`](Self::task_waits)).
    pub async fn task_wait(&self, task_id: &str) -> Result<Option<TaskWait>> {
        Ok(self.task_waits(&[task_id.to_string()]).await?.into_iter().next())
    }

    pub(crate) fn dependency_store(&self, operation: &'static str) -> Result<&dyn DependencyStore> {
        let backend = self.store().backend();
        self.store().dependency_store().ok_or(Error::UnsupportedBackend { operation, backend })
    }
}
