//! `CairnQ::flow`: the reads behind a flow's tree ([`Flow`]). The tasks of
//! a root come from keyset pages of the ordinary list, their waits from one
//! batched read per chunk, and dependencies are read only for the tasks
//! that have a wait, so a fan-out of thousands costs its pages, not a read
//! per task.

use std::collections::HashMap;

use super::CairnQ;
use crate::error::{Result, require_text};
use crate::flow_tree::{Flow, FlowNode, flow_order};
use crate::store::ListFilter;

/// Rows per list page and ids per wait read while gathering a flow.
const PAGE: u32 = 500;

impl CairnQ {
    /// The flow `task_id` belongs to: every task whose root is `task_id`'s
    /// root (the task itself when it is a root), as a tree by parent, with
    /// each node's dependencies and wait. At most `max_nodes` tasks are read,
    /// the newest first (beyond the cap the oldest are left out, the root
    /// always kept; [`Flow::truncated`] says so). `None` when no task has
    /// the id.
    ///
    /// ```no_run
    /// # async fn demo(client: &cairnq_core::CairnQ, root: &str) -> cairnq_core::Result<()> {
    /// if let Some(flow) = client.flow(root, 10_000).await? {
    ///     for node in &flow.nodes {
    ///         println!("{}{} {}", "  ".repeat(node.depth), node.name, node.state());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn flow(&self, task_id: &str, max_nodes: u32) -> Result<Option<Flow>> {
        require_text("task_id", task_id)?;
        let Some(task) = self.get(task_id).await? else { return Ok(None) };
        let root_id = task.root_id.clone().unwrap_or_else(|| task.id.clone());
        let mut tasks = Vec::new();
        let mut undecodable = Vec::new();
        let mut filter = ListFilter::new().root_id(&root_id).limit(PAGE.min(max_nodes.max(1)));
        let truncated = loop {
            let page = self.list(&filter).await?;
            tasks.extend(page.tasks);
            undecodable.extend(page.undecodable);
            match page.next {
                None => break false,
                Some(_) if tasks.len() >= max_nodes as usize => break true,
                Some(next) => filter = filter.after(next),
            }
        };
        tasks.truncate(max_nodes.max(1) as usize);
        // A root another SDK wrote may carry no root_id of its own.
        if !tasks.iter().any(|t| t.id == root_id) {
            let root = if task.id == root_id { Some(task) } else { self.get(&root_id).await? };
            tasks.extend(root);
        }
        let mut nodes: Vec<FlowNode> = flow_order(&root_id, tasks).iter().map(|(d, t)| FlowNode::new(*d, t)).collect();
        let ids: Vec<String> = nodes.iter().map(|n| n.id.clone()).collect();
        let mut waits = Vec::new();
        for chunk in ids.chunks(PAGE as usize) {
            waits.extend(self.task_waits(chunk).await?);
        }
        let at: HashMap<String, usize> = ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect();
        for wait in waits {
            if let Some(node) = at.get(&wait.task_id).map(|&i| &mut nodes[i]) {
                node.dependencies = self.dependencies(&node.id).await?.into_iter().map(|t| t.id).collect();
                node.wait = Some(wait);
            }
        }
        Ok(Some(Flow { root_id, nodes, truncated, undecodable }))
    }
}
