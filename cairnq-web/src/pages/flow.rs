//! The "Flow" section of a task's page: every task of its root, drawn as
//! nested lists by parent (the tree [`cairnq_core::CairnQ::flow`] orders),
//! each node linking to its page with its status, its wait and the tasks
//! it was submitted after. Server-rendered and refreshed with the rest of
//! the page by the live updates; every value is interpolated by maud, so
//! escaped.

use cairnq_core::{Flow, FlowNode};
use maud::{Markup, html};

use crate::html::{PageCtx, status_badge, task_link};

/// The most tasks of a flow drawn on a task's page.
pub(crate) const FLOW_SHOWN: u32 = 200;

/// The section (nothing for a task alone in its flow).
pub(crate) fn section(ctx: &PageCtx, flow: Option<&Flow>, current: &str) -> Markup {
    let Some(flow) = flow.filter(|f| f.nodes.len() > 1) else { return html! {} };
    html! {
        h2 { "Flow" }
        div #flow { (level(ctx, &flow.nodes, current)) }
        @if flow.truncated {
            p.muted { "The newest " (FLOW_SHOWN) " tasks of the flow shown; " code { "cairnq flow " (flow.root_id) } " draws it whole." }
        }
    }
}

/// `nodes` are siblings, each followed by its descendants (deeper nodes):
/// one list, each item holding its descendants' list.
fn level(ctx: &PageCtx, nodes: &[FlowNode], current: &str) -> Markup {
    let depth = nodes.first().map_or(0, |n| n.depth);
    let mut items = Vec::new();
    let mut at = 0;
    while at < nodes.len() {
        let end = nodes[at + 1..].iter().position(|n| n.depth <= depth).map_or(nodes.len(), |p| at + 1 + p);
        items.push((&nodes[at], &nodes[at + 1..end]));
        at = end;
    }
    html! {
        ul.flow {
            @for (node, below) in items {
                li data-task=(node.id) class=[(node.id == current).then_some("current")] {
                    (task_link(ctx, &node.id)) " " (node.name) " " (status_badge(node.status))
                    @if let Some(waiting) = node.wait.as_ref().and_then(|w| w.describe()) { " " span.muted { (waiting) } }
                    @if !node.dependencies.is_empty() {
                        " " span.muted { "after: " }
                        @for (i, dep) in node.dependencies.iter().enumerate() {
                            @if i > 0 { ", " }
                            (task_link(ctx, dep))
                        }
                    }
                    @if !below.is_empty() { (level(ctx, below, current)) }
                }
            }
        }
    }
}
