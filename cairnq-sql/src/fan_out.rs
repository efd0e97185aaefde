//! A handler's fan-out written once over an [`Executor`]: its own success,
//! its children and the join waiting for them, in the caller's one
//! transaction, so a process dying anywhere in between leaves either all
//! of it or none.
//!
//! The settle goes first: it is the ownership check, so an attempt that
//! lost its lease fails there and the transaction holds no other write;
//! and a pending cancel (the settle ends the row canceled) stops the
//! fan-out before any child exists.

use std::collections::{HashMap, HashSet};

use cairnq_core::store::{FanOut, FanOutParams, SubmitAfterParams, SubmitManyParams};
use cairnq_core::{Result, TaskStatus};

use crate::after::submit_after_known;
use crate::flows::{Executor, complete, submit, submit_many};

/// Settles `params.settle` (as [`complete`]), then inserts the children
/// and the join waiting for them (as [`submit_many`] and
/// [`submit_after`](crate::after::submit_after)), in the caller's
/// transaction. With nothing to wait for, the join is a plain [`submit`].
pub async fn complete_with_fan_out(exec: &impl Executor, params: &FanOutParams) -> Result<FanOut> {
    let task = complete(exec, &params.settle).await?;
    if task.status != TaskStatus::Succeeded {
        return Ok(FanOut::new(task, Vec::new(), None));
    }
    let children = submit_many(exec, &SubmitManyParams::new(params.children.clone())).await?;
    // Two children with one key are one task, waited for once.
    let mut seen = HashSet::new();
    let after: Vec<String> = children
        .iter()
        .map(|child| &child.id)
        .chain(&params.join.after)
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect();
    // A child inserted now (its row has the id asked for; a key may return
    // an older task instead) is known queued, and no lock can add to that.
    let inserted: HashMap<String, TaskStatus> = children
        .iter()
        .zip(&params.children)
        .filter(|(child, asked)| child.id == asked.id)
        .map(|(child, _)| (child.id.clone(), child.status))
        .collect();
    let join = if after.is_empty() {
        submit(exec, &params.join.task).await?
    } else {
        let join = SubmitAfterParams::new(params.join.task.clone(), after).on_failure(params.join.on_failure);
        submit_after_known(exec, &join, &inserted).await?
    };
    Ok(FanOut::new(task, children, Some(join)))
}
