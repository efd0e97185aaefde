//! The dashboard's HTML pages, one module each, and the form actions they
//! post to.

pub(crate) mod bulk;
pub(crate) mod detail;
pub(crate) mod overview;
pub(crate) mod tasks;
pub(crate) mod workers;

use cairnq_core::{CairnQ, ListFilter, Result, Task, TaskStatus};

/// The most running tasks a page reads (overview, workers).
const RUNNING_SHOWN: u32 = 500;

/// The running tasks, newest first, at most [`RUNNING_SHOWN`]; and whether
/// there are more.
pub(crate) async fn running(client: &CairnQ) -> Result<(Vec<Task>, bool)> {
    let page = client.list(&ListFilter::new().status(TaskStatus::Running).limit(RUNNING_SHOWN)).await?;
    Ok((page.tasks, page.next.is_some()))
}
