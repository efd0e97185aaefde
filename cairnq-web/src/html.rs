//! The frame every page shares (head, navigation, the live-update hook),
//! the refusal page, and small renderers of task fields. maud escapes every
//! interpolated value, so nothing here marks text as pre-escaped.

use std::time::Duration;

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use cairnq_core::{Json as TaskJson, Task, TaskStatus, human_duration};
use maud::{DOCTYPE, Markup, html};

use crate::time::format_ms;

/// The request header the page script sends to get only a page's `<main>`.
const PARTIAL_HEADER: &str = "x-cairnq-partial";

/// Where the dashboard is mounted, and whether the page script wants only
/// the page's content (a live refresh).
#[derive(Debug, Clone)]
pub(crate) struct PageCtx {
    /// The mount path without a trailing slash (`""` at the root).
    pub(crate) base: String,
    partial: bool,
}

impl PageCtx {
    /// The overview's address (`/` at the root, else the mount path itself:
    /// a nested router does not answer the mount path with a slash added).
    pub(crate) fn home(&self) -> &str {
        if self.base.is_empty() { "/" } else { &self.base }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PageCtx {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let inner = parts.uri.path();
        let outer = parts.extensions.get::<OriginalUri>().map_or(inner, |uri| uri.0.path());
        let base = outer.strip_suffix(inner).unwrap_or(outer).trim_end_matches('/').to_string();
        Ok(Self { base, partial: parts.headers.contains_key(PARTIAL_HEADER) })
    }
}

/// What scripts may load and run: only the dashboard's own files.
const POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
                      frame-ancestors 'none'; form-action 'self'";

/// A whole page (or just its content, for a live refresh). `live` pages
/// are refreshed by the page script when the queue changes.
pub(crate) fn layout(ctx: &PageCtx, title: &str, live: bool, body: Markup) -> Response {
    let base = &ctx.base;
    let markup = if ctx.partial {
        body
    } else {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · cairnq" }
                    link rel="stylesheet" href={ (base) "/assets/style.css" };
                    script src={ (base) "/assets/app.js" } defer {}
                }
                body data-base=(base) {
                    header {
                        a.brand href=(ctx.home()) { "cairnq" }
                        nav {
                            a href=(ctx.home()) { "Overview" }
                            a href={ (base) "/tasks" } { "Tasks" }
                            a href={ (base) "/workers" } { "Workers" }
                            a href={ (base) "/schedules" } { "Schedules" }
                            a href={ (base) "/limits" } { "Limits" }
                        }
                        // Filled by the page script when it holds updates back.
                        button #updates.updates type="button" hidden {}
                        span #live.live title="Live updates" { "" }
                    }
                    main #main data-live=(if live { "on" } else { "off" }) { (body) }
                }
            }
        }
    };
    let mut response = axum::response::Html(markup.into_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A refused request: JSON `{"error": ...}` for the API, a page otherwise.
pub(crate) fn refusal(ctx: &PageCtx, machine: bool, status: StatusCode, message: &str) -> Response {
    let mut response = if machine {
        Json(serde_json::json!({ "error": message })).into_response()
    } else {
        layout(
            ctx,
            "Refused",
            false,
            html! { h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) } p.notice.bad { (message) } },
        )
    };
    *response.status_mut() = status;
    response
}

/// A core error as a page: a bad filter is the caller's, anything else the
/// store's.
pub(crate) fn error_page(ctx: &PageCtx, error: &cairnq_core::Error) -> Response {
    refusal(ctx, false, status_of(error), &error.to_string())
}

/// The HTTP status a core error answers with.
pub(crate) fn status_of(error: &cairnq_core::Error) -> StatusCode {
    match error.kind() {
        cairnq_core::ErrorKind::ValidationError => StatusCode::BAD_REQUEST,
        cairnq_core::ErrorKind::NotFound => StatusCode::NOT_FOUND,
        // A store without the operation (schedules on a store that keeps none).
        cairnq_core::ErrorKind::UnsupportedBackend => StatusCode::NOT_IMPLEMENTED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A status as a coloured label.
pub(crate) fn status_badge(status: TaskStatus) -> Markup {
    html! { span class={ "status " (status.as_str()) } { (status.as_str()) } }
}

/// A link to a task's page.
pub(crate) fn task_link(ctx: &PageCtx, id: &str) -> Markup {
    html! { a.id href={ (ctx.base) "/tasks/" (crate::href::segment(id)) } { (id) } }
}

/// A time, with how long ago (or ahead) it is.
pub(crate) fn when(ms: Option<i64>, now_ms: i64) -> Markup {
    match ms {
        None => html! { span.muted { "—" } },
        Some(ms) => {
            let span = human_duration(Duration::from_millis(now_ms.abs_diff(ms)));
            let relation = if ms <= now_ms { format!("{span} ago") } else { format!("in {span}") };
            html! { time title=(relation) { (format_ms(ms)) } " " span.muted { "(" (relation) ")" } }
        }
    }
}

/// Stored JSON, pretty-printed when it parses (it always should), as text.
pub(crate) fn json_block(json: &TaskJson) -> Markup {
    let pretty = json.to_value().ok().and_then(|v| serde_json::to_string_pretty(&v).ok());
    html! { pre.json { (pretty.as_deref().unwrap_or(json.as_str())) } }
}

/// A progress bar for a task's 0..1 progress, with its message.
pub(crate) fn progress(task: &Task) -> Markup {
    html! {
        @if let Some(p) = task.progress {
            @let percent = (p * 100.0).clamp(0.0, 100.0);
            progress max="100" value=(format!("{percent:.0}")) {}
            " " (format!("{percent:.0}%"))
        }
        @if let Some(message) = &task.message { " " span.message { (message) } }
    }
}

/// A link to the tasks page filtered by `fields`.
pub(crate) fn tasks_href(ctx: &PageCtx, fields: &[(&str, &str)]) -> String {
    format!("{}/tasks?{}", ctx.base, crate::href::query(fields))
}

/// Thousands separators, for counts.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
