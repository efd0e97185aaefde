//! Task dependencies (extension `ext_0008_task_dependencies`) on plain
//! collections: the edges and waits of the SQL backends' tables, and the
//! rules of their trigger, run after every write that ended a task
//! ([`settle`]), inside the same lock, so a write and what it releases
//! are seen together, as a SQL transaction's are.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use cairnq_core::store::{
    DependenciesParams, DependencyStore, FanOut, FanOutParams, SubmitAfterParams, SubmitManyParams, TaskRow,
    TaskWaitsParams,
};
use cairnq_core::{
    DependencyFailure, Error, Result, Task, TaskStatus, TaskWait, WAITING_RUN_AT_MS, dependency_failed, is_waiting,
};

use crate::MemoryStore;
use crate::tables::{Tables, Txn};
use crate::{task_ops, worker_ops};

/// One task's wait: `cairnq_ext_task_waits`.
#[derive(Debug)]
struct Wait {
    on_failure: DependencyFailure,
    /// The dependencies, in the submit's order, each with the status it
    /// ended with (`None`: not yet).
    edges: Vec<(String, Option<TaskStatus>)>,
    not_before_ms: i64,
}

impl Wait {
    fn remaining(&self) -> usize {
        self.edges.iter().filter(|(_, outcome)| outcome.is_none()).count()
    }
}

/// Every wait, and who waits for each task.
#[derive(Debug, Default)]
pub(super) struct Dependencies {
    waits: HashMap<String, Wait>,
    dependents: HashMap<String, Vec<String>>,
}

impl Dependencies {
    fn add(&mut self, task_id: &str, wait: Wait) {
        for (dependency, _) in &wait.edges {
            self.dependents.entry(dependency.clone()).or_default().push(task_id.to_string());
        }
        self.waits.insert(task_id.to_string(), wait);
    }

    /// Forgets purged tasks, as the tables' `on delete cascade` does.
    pub(super) fn forget(&mut self, ids: &[String]) {
        for id in ids {
            if let Some(wait) = self.waits.remove(id) {
                for (dependency, _) in wait.edges {
                    if let Some(list) = self.dependents.get_mut(&dependency) {
                        list.retain(|t| t != id);
                    }
                }
            }
            for dependent in self.dependents.remove(id).unwrap_or_default() {
                if let Some(wait) = self.waits.get_mut(&dependent) {
                    wait.edges.retain(|(d, _)| d != id);
                }
            }
        }
    }
}

/// The trigger's rules after a write that ended the tasks in
/// `txn.changes`: each dependency counts once for each task waiting
/// for it; a failure cancels the waiting tasks whose policy says so (and
/// so on down the chain); a task with nothing left to wait for becomes due.
pub(super) fn settle(txn: &mut Txn<'_>, deps: &mut Dependencies) {
    let mut ended: VecDeque<String> = txn.changes.ended().map(str::to_string).collect();
    while let Some(id) = ended.pop_front() {
        let Some((status, name)) = txn.tables().task(&id).map(|t| (t.status, t.name.clone())) else { continue };
        for dependent in deps.dependents.get(&id).cloned().unwrap_or_default() {
            let Some(wait) = deps.waits.get_mut(&dependent) else { continue };
            let Some(edge) = wait.edges.iter_mut().find(|(d, outcome)| *d == id && outcome.is_none()) else { continue };
            edge.1 = Some(status);
            if !txn.tables().task(&dependent).is_some_and(is_waiting) {
                continue;
            }
            let now_ms = txn.now_ms;
            if status != TaskStatus::Succeeded && wait.on_failure == DependencyFailure::Cancel {
                let envelope = dependency_failed(&id, &name, status).to_json();
                txn.update(&dependent, |t| {
                    t.status = TaskStatus::Canceled;
                    t.error = Some(envelope);
                    t.completed_at_ms = Some(now_ms);
                });
                ended.push_back(dependent);
            } else if wait.remaining() == 0 {
                let due = now_ms.max(wait.not_before_ms);
                if let Some(task) = txn.update(&dependent, |t| t.run_at_ms = due) {
                    txn.changes.queued_on(&task.queue);
                }
            }
        }
    }
}

fn submit_after(txn: &mut Txn<'_>, deps: &mut Dependencies, p: &SubmitAfterParams) -> Result<Task> {
    let mut statuses = Vec::with_capacity(p.after.len());
    for id in &p.after {
        let Some(task) = txn.tables().task(id) else {
            return Err(Error::validation(
                "after",
                format!("no task {id} exists: a dependency must be submitted first"),
            ));
        };
        statuses.push((task.status, task.name.clone()));
    }
    let task = task_ops::submit(txn, &p.task)?;
    if task.id != p.task.id {
        return Ok(task);
    }
    let ended = |status: TaskStatus| Some(status).filter(|s| s.is_terminal());
    let edges: Vec<(String, Option<TaskStatus>)> =
        p.after.iter().zip(&statuses).map(|(id, (status, _))| (id.clone(), ended(*status))).collect();
    let failed = p.after.iter().zip(&statuses).find(|(_, (s, _))| s.is_terminal() && *s != TaskStatus::Succeeded);
    let wait = Wait { on_failure: p.on_failure, edges, not_before_ms: task.run_at_ms };
    let remaining = wait.remaining();
    deps.add(&task.id, wait);
    let now_ms = txn.now_ms;
    let changed = match failed {
        Some((id, (status, name))) if p.on_failure == DependencyFailure::Cancel => {
            let envelope = dependency_failed(id, name, *status).to_json();
            txn.update(&task.id, |t| {
                t.status = TaskStatus::Canceled;
                t.error = Some(envelope);
                t.completed_at_ms = Some(now_ms);
            })
        }
        _ if remaining > 0 => txn.update(&task.id, |t| t.run_at_ms = WAITING_RUN_AT_MS),
        _ => return Ok(task),
    };
    changed.ok_or_else(|| Error::corrupt_row("the task submitted with dependencies vanished in its own operation"))
}

/// A handler's fan-out as the SQL backends' one transaction: the settle
/// first (the ownership check), then the children and the join waiting for
/// them; a pending cancel stops it after the settle.
fn fan_out(txn: &mut Txn<'_>, deps: &mut Dependencies, p: &FanOutParams) -> Result<FanOut> {
    let task = worker_ops::complete(txn, &p.settle.task_id, &p.settle.worker_id, &p.settle.result)?;
    if task.status != TaskStatus::Succeeded {
        return Ok(FanOut::new(task, Vec::new(), None));
    }
    let children = task_ops::submit_many(txn, &SubmitManyParams::new(p.children.clone()))?;
    let mut seen = std::collections::HashSet::new();
    let after: Vec<String> = children
        .iter()
        .map(|child| &child.id)
        .chain(&p.join.after)
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect();
    let join = if after.is_empty() {
        task_ops::submit(txn, &p.join.task)?
    } else {
        submit_after(txn, deps, &SubmitAfterParams::new(p.join.task.clone(), after).on_failure(p.join.on_failure))?
    };
    Ok(FanOut::new(task, children, Some(join)))
}

fn wait_of(tables: &Tables, task_id: &str, wait: &Wait) -> TaskWait {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let waiting = tables.task(task_id).is_some_and(is_waiting);
    TaskWait::new(task_id, count(wait.edges.len()), count(wait.remaining()), wait.on_failure, waiting)
}

impl MemoryStore {
    pub(super) fn dependencies_lock(&self) -> std::sync::MutexGuard<'_, Dependencies> {
        self.dependencies.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl DependencyStore for MemoryStore {
    async fn submit_after(&self, params: &SubmitAfterParams) -> Result<Task> {
        self.write(|txn| submit_after(txn, &mut self.dependencies_lock(), params))
    }

    async fn complete_with_fan_out(&self, params: &FanOutParams) -> Result<FanOut> {
        self.write(|txn| fan_out(txn, &mut self.dependencies_lock(), params))
    }

    async fn dependencies(&self, params: &DependenciesParams) -> Result<Vec<TaskRow>> {
        self.read(|tables, _| {
            let deps = self.dependencies_lock();
            let Some(wait) = deps.waits.get(&params.task_id) else { return Ok(Vec::new()) };
            Ok(wait.edges.iter().filter_map(|(id, _)| tables.task(id)).map(|t| Ok(t.clone())).collect())
        })
    }

    async fn task_waits(&self, params: &TaskWaitsParams) -> Result<Vec<TaskWait>> {
        self.read(|tables, _| {
            let deps = self.dependencies_lock();
            Ok(params.task_ids.iter().filter_map(|id| deps.waits.get(id).map(|w| wait_of(tables, id, w))).collect())
        })
    }
}
