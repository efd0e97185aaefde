//! The schedules page (the book's "Schedules" chapter): every schedule with its spec,
//! zone, next fire, last fired slot, missed slots, policies, owner and
//! whether it is paused, with pause / resume / trigger-now buttons, and a
//! delete behind a confirmation for the ones made through the API (a
//! worker's code declares its own again at every start).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use cairnq_core::{ErrorKind, ScheduleInfo, ScheduleOwner, now_ms};
use maud::{Markup, html};

use crate::href;
use crate::html::{PageCtx, error_page, layout, refusal, when};
use crate::pages::tasks::Notice;
use crate::schedule_ops::{Acted, ScheduleAction, act, next_fire};
use crate::state::AppState;

/// `GET /schedules`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx, Query(notice): Query<Notice>) -> Response {
    let schedules = match state.client.schedules().await {
        Ok(schedules) => Some(schedules),
        Err(error) if error.kind() == ErrorKind::UnsupportedBackend => None,
        Err(error) => return error_page(&ctx, &error),
    };
    let body = html! {
        h1 { "Schedules" }
        @if let Some(notice) = notice.text() { p.notice #notice { (notice) } }
        @match &schedules {
            None => p.muted { "This store keeps no schedules." },
            Some(schedules) if schedules.is_empty() => {
                p.muted { "No schedules yet (" code { "cairnq schedule add" } ", or declared on a worker)." }
            }
            Some(schedules) => (table(&ctx, schedules, state.writable())),
        }
    };
    layout(&ctx, "Schedules", true, body)
}

fn table(ctx: &PageCtx, schedules: &[ScheduleInfo], writable: bool) -> Markup {
    let now = now_ms();
    html! {
        table #schedules {
            thead { tr {
                th { "Name" } th { "Task" } th { "Queue" } th { "Spec" } th { "Zone" } th { "Next fire" }
                th { "Last fired slot" } th.num { "Missed" } th { "Catch-up / overlap" } th { "State" } th { "Owner" }
                @if writable { th { "Actions" } }
            } }
            tbody {
                @for info in schedules {
                    @let s = &info.schedule;
                    tr data-schedule=(s.name) {
                        td { code { (s.name) } }
                        td { (s.task) }
                        td { (s.queue) }
                        td { code { (s.spec.as_str()) } }
                        td { (s.spec.tz()) }
                        td { @match next_fire(info) { Some(ms) => (when(Some(ms), now)), None => span.muted { "never" } } }
                        td { (when(info.last_slot_ms, now)) }
                        td.num { (info.missed) }
                        td { (s.catch_up.as_str()) " / " (s.overlap.as_str()) }
                        td.state { @if info.paused { span.status.canceled { "paused" } } @else { "active" } }
                        td { (info.owner.as_str()) }
                        @if writable { td.schedule-actions { (actions(ctx, info)) } }
                    }
                }
            }
        }
    }
}

/// The buttons of one schedule (each a POST form to its action).
fn actions(ctx: &PageCtx, info: &ScheduleInfo) -> Markup {
    let path = format!("{}/schedules/{}", ctx.base, href::segment(&info.schedule.name));
    let toggle = if info.paused { ScheduleAction::Resume } else { ScheduleAction::Pause };
    html! {
        @for action in [toggle, ScheduleAction::Trigger] {
            form.inline method="post" action={ (path) "/" (action.as_str()) } {
                button type="submit" data-action=(action.as_str()) { (label(action)) }
            }
        }
        @if info.owner == ScheduleOwner::Api { a.button href={ (path) "/delete" } data-action="delete" { "Delete…" } }
    }
}

fn label(action: ScheduleAction) -> &'static str {
    match action {
        ScheduleAction::Pause => "Pause",
        ScheduleAction::Resume => "Resume",
        ScheduleAction::Trigger => "Trigger now",
        ScheduleAction::Delete => "Delete",
    }
}

/// `GET /schedules/{name}/delete`: asks before deleting.
pub(crate) async fn confirm_delete(State(state): State<AppState>, ctx: PageCtx, Path(name): Path<String>) -> Response {
    if !state.writable() {
        return refusal(&ctx, false, StatusCode::FORBIDDEN, "this dashboard is read-only");
    }
    let path = format!("{}/schedules/{}", ctx.base, href::segment(&name));
    let body = html! {
        h1 { "Delete schedule " code { (name) } "?" }
        p { "It stops firing for good; the tasks it already submitted stay." }
        form method="post" action={ (path) "/delete" } {
            button #confirm-delete type="submit" { "Delete " (name) }
            " " a href={ (ctx.base) "/schedules" } { "back" }
        }
    };
    layout(&ctx, "Delete schedule", false, body)
}

/// `POST /schedules/{name}/{pause|resume|trigger}` from the page.
pub(crate) async fn apply(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    match ScheduleAction::parse(&action) {
        Some(action) => acted(&state, &ctx, &name, action).await,
        None => refusal(&ctx, false, StatusCode::NOT_FOUND, "the action must be pause, resume, trigger or delete"),
    }
}

/// `POST /schedules/{name}/delete` from the confirmation.
pub(crate) async fn delete(State(state): State<AppState>, ctx: PageCtx, Path(name): Path<String>) -> Response {
    acted(&state, &ctx, &name, ScheduleAction::Delete).await
}

/// Does the action, then back to the list saying what happened.
async fn acted(state: &AppState, ctx: &PageCtx, name: &str, action: ScheduleAction) -> Response {
    let notice = match act(&state.client, name, action).await {
        Ok(Ok(Acted::Fired(task))) => format!("{name}: triggered, task {}", task.id),
        Ok(Ok(Acted::Changed(info))) => format!("{name}: {}", if info.paused { "paused" } else { "resumed" }),
        Ok(Ok(Acted::Deleted)) => format!("{name}: deleted"),
        Ok(Err(refused)) => return refusal(ctx, false, refused.status(), &refused.message(name)),
        Err(error) => return error_page(ctx, &error),
    };
    Redirect::to(&format!("{}/schedules?{}", ctx.base, href::query(&[("notice", &notice)]))).into_response()
}
