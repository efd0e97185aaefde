//! A flow seen whole: the tasks of one root drawn as a tree by `parent_id`,
//! each with what it waits for. `cairnq flow` and the dashboard's task page
//! draw the same [`Flow`], so the order of the tree (children under their
//! parent, oldest first) is decided once, here, as a pure function.
//!
//! Not to be confused with `cairnq_sql::flows`, the SQL operation flows.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::dependencies::TaskWait;
use crate::model::{Task, TaskStatus, Undecodable};

/// The tasks of one root, in tree order ([`CairnQ::flow`](crate::CairnQ::flow)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Flow {
    /// The root task's id (every node's `root_id`).
    pub root_id: String,
    /// The nodes, depth first: each parent before its children, siblings by
    /// creation time.
    pub nodes: Vec<FlowNode>,
    /// Whether the flow holds more tasks than were read (the cap asked for).
    pub truncated: bool,
    /// Rows of the flow that did not decode, left out of the tree.
    pub undecodable: Vec<Undecodable>,
}

/// One task of a [`Flow`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FlowNode {
    /// 0 for the root (and for a task whose parent is not in the flow, such
    /// as a purged one), its parent's depth + 1 otherwise.
    pub depth: usize,
    /// The task id.
    pub id: String,
    /// The handler name.
    pub name: String,
    /// Where the task is in its life.
    pub status: TaskStatus,
    /// The task that submitted it.
    pub parent_id: Option<String>,
    /// When it was submitted (ms since the epoch).
    pub created_at_ms: i64,
    /// The ids of the tasks it was submitted after (empty for none).
    pub dependencies: Vec<String>,
    /// How far it is along its wait, for a task submitted with dependencies.
    pub wait: Option<TaskWait>,
}

impl FlowNode {
    /// A node for `task` at `depth`, with no dependencies yet.
    pub fn new(depth: usize, task: &Task) -> Self {
        Self {
            depth,
            id: task.id.clone(),
            name: task.name.clone(),
            status: task.status,
            parent_id: task.parent_id.clone(),
            created_at_ms: task.created_at_ms,
            dependencies: Vec::new(),
            wait: None,
        }
    }

    /// "queued, waiting for 1 of 2 tasks", or the bare status.
    pub fn state(&self) -> String {
        match self.wait.as_ref().and_then(TaskWait::describe) {
            Some(wait) => format!("{}, {wait}", self.status.as_str()),
            None => self.status.as_str().to_string(),
        }
    }
}

/// `tasks` (any order) as a tree below `root_id`: each task's children
/// (the tasks whose `parent_id` is its id) follow it one level deeper,
/// oldest first (ties by id). A task whose parent is not among `tasks`
/// starts a tree of its own at depth 0 after the root's; the root need not
/// be among `tasks`. Each task appears once, whatever cycles bad rows make.
///
/// ```
/// # use cairnq_core::flow_order;
/// assert!(flow_order("task_none", Vec::new()).is_empty());
/// ```
pub fn flow_order(root_id: &str, mut tasks: Vec<Task>) -> Vec<(usize, Task)> {
    tasks.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    let present: HashSet<String> = tasks.iter().map(|t| t.id.clone()).collect();
    let mut children: HashMap<String, Vec<usize>> = HashMap::new();
    let mut tops = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        match &task.parent_id {
            Some(parent) if task.id != root_id && parent != &task.id && present.contains(parent) => {
                children.entry(parent.clone()).or_default().push(index);
            }
            _ => tops.push(index),
        }
    }
    // The root first, then the orphans, each oldest first.
    tops.sort_by_key(|&index| tasks[index].id != root_id);
    let mut placed = vec![false; tasks.len()];
    let mut order = Vec::with_capacity(tasks.len());
    let mut stack: Vec<(usize, usize)> = tops.iter().rev().map(|&index| (0, index)).collect();
    let mut pending = tasks.len();
    loop {
        while let Some((depth, index)) = stack.pop() {
            if std::mem::replace(&mut placed[index], true) {
                continue;
            }
            pending -= 1;
            order.push((depth, index));
            if let Some(kids) = children.get(&tasks[index].id) {
                stack.extend(kids.iter().rev().map(|&kid| (depth + 1, kid)));
            }
        }
        // Only a parent cycle (rows no SDK writes) leaves tasks unplaced:
        // each is shown once, at the top.
        match (pending > 0).then(|| placed.iter().position(|done| !done)).flatten() {
            Some(index) => stack.push((0, index)),
            None => break,
        }
    }
    let mut slots: Vec<Option<Task>> = tasks.into_iter().map(Some).collect();
    order.into_iter().filter_map(|(depth, index)| slots[index].take().map(|task| (depth, task))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, parent: Option<&str>, created_at_ms: i64) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "name": id, "queue": "default", "status": "queued", "payload": null,
            "result": null, "error": null, "metadata": {}, "progress": null, "message": null,
            "attempt": 0, "max_attempts": 3, "priority": 0, "worker_id": null, "lease_until_ms": null,
            "run_at_ms": 0, "cancel_requested_at_ms": null, "parent_id": parent, "root_id": "r",
            "correlation_id": null, "created_at_ms": created_at_ms, "updated_at_ms": created_at_ms,
            "completed_at_ms": null,
        }))
        .expect("a task")
    }

    fn drawn(order: &[(usize, Task)]) -> Vec<(usize, &str)> {
        order.iter().map(|(depth, task)| (*depth, task.id.as_str())).collect()
    }

    #[test]
    fn children_follow_their_parent_oldest_first() {
        let tasks = vec![
            task("join", Some("r"), 40),
            task("b", Some("r"), 30),
            task("a", Some("r"), 20),
            task("a1", Some("a"), 25),
            task("r", None, 10),
        ];
        let order = flow_order("r", tasks);
        assert_eq!(drawn(&order), [(0, "r"), (1, "a"), (2, "a1"), (1, "b"), (1, "join")]);
    }

    #[test]
    fn orphans_and_cycles_are_shown_once_after_the_root() {
        let tasks = vec![
            task("lost", Some("purged"), 5),
            task("x", Some("y"), 50),
            task("y", Some("x"), 60),
            task("r", Some("r"), 10),
            task("c", Some("r"), 20),
        ];
        let order = flow_order("r", tasks);
        assert_eq!(drawn(&order), [(0, "r"), (1, "c"), (0, "lost"), (0, "x"), (1, "y")]);
    }
}
