//! Workers, as the live leases show them: each worker id holding running
//! tasks, how many, which, and when its leases end (from the hub's shared
//! snapshot, as the overview).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use cairnq_core::{Task, now_ms};
use maud::html;

use crate::html::{PageCtx, error_page, layout, task_link, when};
use crate::state::AppState;

/// `GET /workers`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx) -> Response {
    let snapshot = match state.hub.snapshot().await {
        Ok(snapshot) => snapshot,
        Err(error) => return error_page(&ctx, &error),
    };
    let (running, more) = (&snapshot.running, snapshot.more_running);
    let now = now_ms();
    let mut workers: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
    for task in running {
        workers.entry(task.worker_id.as_deref().unwrap_or("(none)")).or_default().push(task);
    }
    let body = html! {
        h1 { "Workers" }
        p.muted { "Workers holding a lease now (a worker with nothing running does not show)." }
        @if workers.is_empty() { p.muted { "No worker holds a task." } }
        @else {
            table #workers {
                thead { tr { th { "Worker" } th.num { "Running" } th { "Queues" } th { "Latest lease ends" } th { "Tasks" } } }
                tbody {
                    @for (worker, tasks) in &workers {
                        @let queues: std::collections::BTreeSet<&str> = tasks.iter().map(|t| t.queue.as_str()).collect();
                        tr {
                            td { code { (worker) } }
                            td.num { (tasks.len()) }
                            td { (queues.into_iter().collect::<Vec<_>>().join(", ")) }
                            td { (when(tasks.iter().filter_map(|t| t.lease_until_ms).max(), now)) }
                            td { @for task in tasks.iter().take(5) { (task_link(&ctx, &task.id)) " " } @if tasks.len() > 5 { "…" } }
                        }
                    }
                }
            }
        }
        @if more { p.muted { "Counted from the newest " (running.len()) " running tasks." } }
    };
    layout(&ctx, "Workers", true, body)
}
