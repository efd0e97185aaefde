//! The overview: per queue, counts by status and how long its oldest due
//! task has waited; throughput per minute; the running tasks with their
//! progress. All of it from the hub's shared [`Snapshot`].

use axum::extract::State;
use axum::response::Response;
use cairnq_core::{TaskStatus, human_duration, now_ms};
use maud::{Markup, html};

use crate::chart;
use crate::html::{PageCtx, count, error_page, layout, progress, status_badge, task_link, tasks_href, when};
use crate::snapshot::Snapshot;
use crate::state::AppState;
use crate::time::format_ms;

/// `GET /`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx) -> Response {
    match state.hub.snapshot().await {
        Ok(snapshot) => layout(&ctx, "Overview", true, body(&state, &ctx, &snapshot)),
        Err(error) => error_page(&ctx, &error),
    }
}

fn body(state: &AppState, ctx: &PageCtx, snapshot: &Snapshot) -> Markup {
    let now = now_ms();
    html! {
        h1 { "Overview" }
        (queues(ctx, snapshot))
        p.muted #sampled {
            "Read at " (format_ms(snapshot.read_at_ms)) ": the counts, the running tasks and the waits are "
            "three reads started together, so a task that moved between them can show in one and not another."
        }
        h2 { "Throughput" }
        (chart::throughput(&state.hub.samples(), now))
        h2 { "Running" }
        @if snapshot.running.is_empty() { p.muted { "Nothing is running." } }
        @else {
            table #running {
                thead { tr { th { "Task" } th { "Name" } th { "Queue" } th { "Worker" } th { "Progress" } th { "Updated" } } }
                tbody {
                    @for task in &snapshot.running {
                        tr {
                            td { (task_link(ctx, &task.id)) }
                            td { (task.name) }
                            td { (task.queue) }
                            td { (task.worker_id.as_deref().unwrap_or("")) }
                            td { (progress(task)) }
                            td { (when(Some(task.updated_at_ms), now)) }
                        }
                    }
                }
            }
            @if snapshot.more_running { p.muted { "Showing the newest " (snapshot.running.len()) "." } }
        }
    }
}

/// The table of queues: a count per status (each a link to those tasks)
/// and the wait of the oldest due task.
fn queues(ctx: &PageCtx, snapshot: &Snapshot) -> Markup {
    html! {
        table #queues {
            thead { tr {
                th { "Queue" }
                @for status in TaskStatus::ALL { th.num { (status_badge(status)) } }
                th title="How long the oldest queued task that is due (not delayed) has waited to be claimed" {
                    "Oldest due waited"
                }
            } }
            tbody {
                @for (queue, counts) in &snapshot.stats {
                    tr data-queue=(queue) {
                        td { a href=(tasks_href(ctx, &[("queue", queue)])) { (queue) } }
                        @for status in TaskStatus::ALL {
                            td.num data-status=(status.as_str()) {
                                a href=(tasks_href(ctx, &[("queue", queue), ("status", status.as_str())])) { (count(counts.get(status))) }
                            }
                        }
                        td.oldest { @match snapshot.oldest_due.get(queue) {
                            Some(waited) => (human_duration(*waited)),
                            None => span.muted { "—" },
                        } }
                    }
                }
                @if snapshot.stats.is_empty() { tr { td colspan="7" .muted { "No tasks yet." } } }
            }
        }
    }
}
