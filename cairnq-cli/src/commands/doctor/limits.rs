//! The doctor's look at flow control: every limit with what runs and
//! waits under it (as `cairnq limit ls` reads it), and the keys running
//! more tasks than their limit allows.
//!
//! An over-limit key is the one trace a worker that does not enforce
//! limits leaves: the Python and TypeScript workers claim limited tasks
//! like any other, and so does a cairnq-rs worker on a database without
//! the claim index of ext_0007 (on Postgres, one connected before it was
//! applied). Which worker claimed a task cannot be told from the row
//! (every SDK's worker ids look alike, and nothing else records the SDK),
//! so the doctor names the key and both explanations: such a worker, or a
//! limit lowered while the tasks ran (they finish as they are). It counts
//! from the running tasks the task checks already scanned.

use std::collections::BTreeMap;

use cairnq_core::{CairnQ, LimitInfo, Task};
use serde::Serialize;

use crate::commands::limit::View;
use crate::exit::Failure;

/// The limits of a database that has the limits table (ext_0006).
#[derive(Serialize)]
pub(super) struct LimitFindings {
    pub(super) limits: Vec<View>,
    pub(super) over_limit: Vec<OverLimit>,
}

/// A key running more tasks than its limit's concurrency.
#[derive(Serialize)]
pub(super) struct OverLimit {
    pub(super) key: String,
    /// The key of the limit that applies (`tenant:*` for a prefix default).
    pub(super) limit: String,
    pub(super) running: u64,
    pub(super) concurrency: u32,
}

/// The limits with their counts, and the over-limit keys among `running`
/// (each added to `problems`).
pub(super) async fn check(
    client: &CairnQ,
    running: &[Task],
    problems: &mut Vec<String>,
) -> Result<LimitFindings, Failure> {
    let statuses = client.limit_statuses().await?;
    let infos: Vec<LimitInfo> = statuses.iter().map(|s| s.info.clone()).collect();
    let over_limit = over_limit(&infos, running);
    for over in &over_limit {
        problems.push(format!(
            "key {:?} runs {} task(s), over the {} its limit {:?} allows: a worker that does not enforce limits \
             claimed some (Python and TypeScript workers do not, nor a cairnq-rs worker without ext_0007), or the \
             limit was lowered while they ran (they finish as they are)",
            over.key, over.running, over.concurrency, over.limit
        ));
    }
    Ok(LimitFindings { limits: statuses.iter().map(View::of).collect(), over_limit })
}

/// Keys among `running` with more tasks than the concurrency of the limit
/// that applies to them, by key.
pub(super) fn over_limit(limits: &[LimitInfo], running: &[Task]) -> Vec<OverLimit> {
    let mut per_key: BTreeMap<String, u64> = BTreeMap::new();
    for key in running.iter().filter_map(Task::limit_key) {
        *per_key.entry(key).or_default() += 1;
    }
    per_key
        .into_iter()
        .filter_map(|(key, running)| {
            let governing = LimitInfo::governing(limits, &key)?;
            let concurrency = governing.limit.concurrency?;
            (running > u64::from(concurrency)).then(|| OverLimit {
                limit: governing.limit.key.clone(),
                key,
                running,
                concurrency,
            })
        })
        .collect()
}
