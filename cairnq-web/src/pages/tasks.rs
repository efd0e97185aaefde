//! The tasks page: filters, one keyset page of tasks, the selection form
//! for bulk retry / cancel, and the links that preview an action on every
//! matching task.

use axum::extract::{Query, State};
use axum::response::Response;
use cairnq_core::{TaskStatus, now_ms};
use maud::{Markup, html};

use crate::filter::{TaskQuery, query_string};
use crate::html::{PageCtx, error_page, layout, status_badge, task_link, when};
use crate::state::AppState;

/// What a page says after an action (`?notice=`).
#[derive(serde::Deserialize)]
pub(crate) struct Notice {
    notice: Option<String>,
}

impl Notice {
    /// The notice, when there is one.
    pub(crate) fn text(&self) -> Option<&str> {
        self.notice.as_deref().filter(|text| !text.is_empty())
    }
}

/// `GET /tasks`.
pub(crate) async fn page(
    State(state): State<AppState>,
    ctx: PageCtx,
    Query(query): Query<TaskQuery>,
    Query(notice): Query<Notice>,
) -> Response {
    let filter = match query.filter() {
        Ok(filter) => filter,
        Err(error) => return error_page(&ctx, &error),
    };
    let page = match state.client.list(&filter).await {
        Ok(page) => page,
        Err(error) => return error_page(&ctx, &error),
    };
    let now = now_ms();
    let writable = state.writable();
    let base = &ctx.base;
    let body = html! {
        h1 { "Tasks" }
        @if let Some(notice) = notice.text() { p.notice #notice { (notice) } }
        (filters(&ctx, &query))
        @if writable {
            p.bulk {
                "All matching: "
                @for action in ["retry", "cancel", "purge"] {
                    a.button href={ (base) "/tasks/preview?" (query_string(&query, &[("action", action)])) } { (action) "…" } " "
                }
            }
        }
        form #selection method="post" action=[writable.then(|| format!("{base}/tasks/bulk"))] {
            input type="hidden" name="scope" value="selected";
            // The list on screen, so the action lands back on it.
            @for (field, value) in query.view_fields() { input type="hidden" name=(field) value=(value); }
            @if writable {
                p.bulk {
                    "Selected: "
                    button #bulk-retry type="submit" name="action" value="retry" { "Retry" } " "
                    button #bulk-cancel type="submit" name="action" value="cancel" { "Cancel" }
                }
            }
            table #tasks {
                thead { tr {
                    @if writable { th { input type="checkbox" #select-all title="Select all on this page"; } }
                    th { "Task" } th { "Status" } th { "Name" } th { "Queue" } th { "Attempt" } th { "Created" } th { "Error" }
                } }
                tbody {
                    @for task in &page.tasks {
                        tr data-id=(task.id) {
                            @if writable { td { input type="checkbox" name="id" value=(task.id); } }
                            td { (task_link(&ctx, &task.id)) }
                            td { (status_badge(task.status)) }
                            td { (task.name) }
                            td { (task.queue) }
                            td.num { (task.attempt) "/" (task.max_attempts) }
                            td { (when(Some(task.created_at_ms), now)) }
                            td.error { @if let Some(message) = task.error_message() { (error_cell(&message)) } }
                        }
                    }
                    @for bad in &page.undecodable {
                        tr.bad { td colspan="8" { (bad.to_string()) } }
                    }
                    @if page.tasks.is_empty() && page.undecodable.is_empty() {
                        tr { td colspan="8" .muted { "No task matches." } }
                    }
                }
            }
        }
        @if let Some(next) = &page.next {
            p { a #next href={ (base) "/tasks?" (query_string(&query, &[("limit", query.value("limit")), ("after", &next.to_string())])) } { "Older →" } }
        }
    };
    layout(&ctx, "Tasks", query.after.is_none(), body)
}

/// The most characters of an error message a row shows; the whole
/// message is its tooltip and on the task's page.
const ERROR_SHOWN: usize = 120;

/// Why a task failed, as its row shows it: the envelope's message (not
/// the JSON around it), its first line, cut to [`ERROR_SHOWN`] characters.
fn error_cell(message: &str) -> Markup {
    let first = message.lines().next().unwrap_or("");
    let cut = first.chars().count() > ERROR_SHOWN || first.len() < message.trim_end().len();
    let shown: String = first.chars().take(ERROR_SHOWN).collect();
    html! { span title=(message) { (shown) @if cut { "…" } } }
}

/// The filter form (GET, so a filtered view is a link).
fn filters(ctx: &PageCtx, query: &TaskQuery) -> Markup {
    let text = |field: &str, label: &str, hint: &str| {
        html! { label { (label) " " input type="text" name=(field) value=(query.value(field)) placeholder=(hint); } }
    };
    html! {
        form.filters method="get" action={ (ctx.base) "/tasks" } {
            label { "Status "
                select name="status" {
                    option value="" { "any" }
                    @for status in TaskStatus::ALL {
                        option value=(status.as_str()) selected[query.value("status") == status.as_str()] { (status.as_str()) }
                    }
                }
            }
            (text("queue", "Queue", ""))
            (text("name", "Name", ""))
            (text("key", "Key", ""))
            (text("root", "Root", "task id"))
            (text("correlation", "Correlation", ""))
            (text("since", "Since", "YYYY-MM-DDTHH:MM UTC"))
            (text("until", "Until", "YYYY-MM-DDTHH:MM UTC"))
            button type="submit" { "Filter" }
            " " a href={ (ctx.base) "/tasks" } { "clear" }
        }
    }
}
