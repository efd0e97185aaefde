//! The overview: per queue, counts by status and the oldest queued task;
//! throughput per minute; the running tasks with their progress.

use axum::extract::State;
use axum::response::Response;
use cairnq_core::{CairnQ, ListFilter, Result, TaskStatus};
use maud::{Markup, html};

use crate::chart;
use crate::html::{PageCtx, count, error_page, layout, progress, status_badge, task_link, tasks_href, when};
use crate::state::AppState;
use crate::time::{format_age, now_ms};

/// Queued rows read per queue to find the oldest: a bound, so a queue of a
/// million rows costs one page; past it the age shows as "at least".
const OLDEST_SCAN: u32 = 1000;

/// `GET /`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx) -> Response {
    state.hub.ensure_started();
    match body(&state, &ctx).await {
        Ok(body) => layout(&ctx, "Overview", true, body),
        Err(error) => error_page(&ctx, &error),
    }
}

async fn body(state: &AppState, ctx: &PageCtx) -> Result<Markup> {
    let client = &state.client;
    let (stats, (running, more_running)) = futures::try_join!(client.stats(None), super::running(client))?;
    state.hub.record(&stats);
    let now = now_ms();
    // One bounded read per queue with work waiting, all at once (a store
    // with several readers answers them side by side).
    let oldest = futures::future::try_join_all(stats.iter().map(|(queue, counts)| async move {
        if counts.queued == 0 { Ok(None) } else { oldest_queued(client, queue).await.map(Some) }
    }))
    .await?;
    Ok(html! {
        h1 { "Overview" }
        table #queues {
            thead { tr {
                th { "Queue" }
                @for status in TaskStatus::ALL { th.num { (status_badge(status)) } }
                th { "Oldest queued" }
            } }
            tbody {
                @for ((queue, counts), oldest) in stats.iter().zip(&oldest) {
                    tr data-queue=(queue) {
                        td { a href=(tasks_href(ctx, &[("queue", queue)])) { (queue) } }
                        @for status in TaskStatus::ALL {
                            td.num data-status=(status.as_str()) {
                                a href=(tasks_href(ctx, &[("queue", queue), ("status", status.as_str())])) { (count(counts.get(status))) }
                            }
                        }
                        td { @match oldest {
                            None => span.muted { "—" },
                            Some((created_at_ms, complete)) => {
                                @if !complete { "≥ " }
                                (format_age(now - created_at_ms))
                            }
                        } }
                    }
                }
                @if stats.is_empty() { tr { td colspan="7" .muted { "No tasks yet." } } }
            }
        }
        h2 { "Throughput" }
        (chart::throughput(&state.hub.samples(), now))
        h2 { "Running" }
        @if running.is_empty() { p.muted { "Nothing is running." } }
        @else {
            table #running {
                thead { tr { th { "Task" } th { "Name" } th { "Queue" } th { "Worker" } th { "Progress" } th { "Updated" } } }
                tbody {
                    @for task in &running {
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
            @if more_running { p.muted { "Showing the newest " (running.len()) "." } }
        }
    })
}

/// The creation time of the oldest queued task of `queue`, and whether it
/// is exact (false: more than [`OLDEST_SCAN`] are queued, and this is the
/// oldest of the newest ones, a lower bound on the age).
async fn oldest_queued(client: &CairnQ, queue: &str) -> Result<(i64, bool)> {
    let page = client.list(&ListFilter::new().status(TaskStatus::Queued).queue(queue).limit(OLDEST_SCAN)).await?;
    let oldest = page.tasks.iter().map(|t| t.created_at_ms).min().unwrap_or_else(now_ms);
    Ok((oldest, page.next.is_none()))
}
