//! Fan-out through the lease holder's door: a task's success, its children
//! and a join task waiting for them, checked here in full (every child's
//! options, the join's, the parent wiring) before the store writes them in
//! one transaction ([`DependencyStore::complete_with_fan_out`]).

use super::session::require_owner;
use super::{TaskSpec, WorkerSession};
use crate::error::{Error, Result};
use crate::json::Json;
use crate::model::Task;
use crate::observe;
use crate::store::{FanOut, FanOutParams, NewTask, SettleParams, SubmitAfterParams};

impl WorkerSession {
    /// Completes `parent` (a task this session holds) with `result` and,
    /// in the same transaction, submits `children` and `join`, the join
    /// waiting for every child (and for the ids its own options'
    /// [`after`](crate::SubmitOptions::after) list, if any). Each child and
    /// the join are children of `parent` (parent, root and correlation ids
    /// as [`SubmitOptions::child_of`](crate::SubmitOptions::child_of) sets
    /// them); the join's
    /// [`on_dependency_failure`](crate::SubmitOptions::on_dependency_failure)
    /// is its policy for a child that fails. Backpressure applies to each
    /// queue written to, before anything is written.
    ///
    /// All or nothing: [`Error::LostLease`] (nothing written) once the
    /// lease is gone; a pending cancel wins (the row ends canceled and no
    /// child or join is written); a child with dependencies of its own is
    /// refused with [`Error::Validation`]; every spec is checked before the
    /// write. With no child and nothing else to wait for, the join is due
    /// at once. [`Error::UnsupportedBackend`] on a store without
    /// dependencies.
    pub async fn complete_with_fan_out(
        &self,
        parent: &Task,
        result: impl Into<Json>,
        children: &[TaskSpec],
        join: &TaskSpec,
    ) -> Result<FanOut> {
        require_owner(&parent.id, self.worker_id())?;
        let mut tasks = Vec::with_capacity(children.len());
        for spec in children {
            if !spec.options.after.is_empty() {
                return Err(Error::validation(
                    "children",
                    "a fan-out's child takes no dependencies: the join waits for the children",
                ));
            }
            tasks.push(child_spec(spec, parent).to_new_task()?);
        }
        let join_spec = child_spec(join, parent);
        let join_task = join_spec.to_new_task()?;
        let join = match join_spec.options.after_params(&join_task)? {
            Some(after) => after,
            None => SubmitAfterParams::new(join_task, Vec::new()).on_failure(join_spec.options.on_dependency_failure),
        };
        self.admit_queues(tasks.iter().chain(std::iter::once(&join.task))).await?;
        let mut join = join;
        let _spans: Vec<_> = tasks.iter_mut().chain(std::iter::once(&mut join.task)).map(observe::send_span).collect();
        let settle = SettleParams::new(&parent.id, self.worker_id()).result(result);
        let store = &self.client().store;
        let dependencies = store
            .dependency_store()
            .ok_or(Error::UnsupportedBackend { operation: "fan_out", backend: store.backend() })?;
        let written = match dependencies.complete_with_fan_out(&FanOutParams::new(settle, tasks, join)).await {
            Err(Error::UnsupportedBackend { operation, .. }) => {
                return Err(Error::UnsupportedBackend { operation, backend: store.backend() });
            }
            written => written?,
        };
        for task in written.children.iter().chain(&written.join) {
            observe::submitted(&task.queue, &task.name);
        }
        Ok(written)
    }

    /// The backpressure gate, once per queue the fan-out writes to.
    async fn admit_queues(&self, tasks: impl Iterator<Item = &NewTask>) -> Result<()> {
        let mut seen: Vec<&str> = Vec::new();
        for task in tasks {
            if !seen.contains(&task.queue.as_str()) {
                seen.push(&task.queue);
                self.client().admit(task).await?;
            }
        }
        Ok(())
    }
}

/// `spec` as a child of `parent`.
fn child_spec(spec: &TaskSpec, parent: &Task) -> TaskSpec {
    let mut spec = spec.clone();
    spec.options = spec.options.child_of(parent);
    spec
}
