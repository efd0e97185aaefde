//! `cairnq flow ID`: the tree of the flow a task belongs to (every task of
//! its root, children under their parent), each node's status, what a
//! waiting task still waits for and what it was submitted after. The tree
//! itself is the library's ([`cairnq_core::CairnQ::flow`]); this module
//! only draws it.

use cairnq_core::Flow;

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::output::{Format, hint};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A task id: its root's flow is drawn (the task itself for a root).
    id: String,
    /// At most this many tasks (the newest; the root is always shown).
    #[arg(long, default_value_t = 10_000)]
    max: u32,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    if args.max == 0 {
        return Err(Failure::usage("--max must be at least 1"));
    }
    let client = context.existing().await?;
    let flow = client
        .flow(&args.id, args.max)
        .await?
        .ok_or_else(|| Failure::not_found(format_args!("with id {}", args.id)))?;
    match context.out.format {
        Format::Json => context.out.json(&flow)?,
        Format::Jsonl => {
            for node in &flow.nodes {
                context.out.json_line(node)?;
            }
        }
        Format::Table => {
            if flow.root_id != args.id {
                hint(&format!("{} belongs to the flow of {}", args.id, flow.root_id));
            }
            context.out.text(&draw(&flow))?;
            for bad in &flow.undecodable {
                hint(&format!("undecodable row: {bad}"));
            }
        }
    }
    if flow.truncated {
        hint(&format!("the flow holds more than {} tasks: --max to see more", args.max));
    }
    Ok(Exit::Ok)
}

/// One line per node, indented two spaces a level:
/// `name  id  status[, waiting for N of M tasks][  after: id, id]`.
fn draw(flow: &Flow) -> String {
    let mut text = String::new();
    for node in &flow.nodes {
        text.push_str(&"  ".repeat(node.depth));
        text.push_str(&format!("{}  {}  {}", node.name, node.id, node.state()));
        if !node.dependencies.is_empty() {
            text.push_str(&format!("  after: {}", node.dependencies.join(", ")));
        }
        text.push('\n');
    }
    text
}
