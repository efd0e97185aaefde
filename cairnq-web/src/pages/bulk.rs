//! Bulk actions: retry or cancel the selected tasks, or retry / cancel /
//! purge every task matching the filters, after a preview page says how
//! many that is.

use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use cairnq_core::{CairnQ, PurgeFilter, Result, Task, TaskStatus};
use futures::StreamExt;
use maud::html;

use crate::filter::{MATCH_CAP, Selection, TaskQuery, query_string};
use crate::html::{PageCtx, count, error_page, layout, refusal};
use crate::state::AppState;

/// Retries or cancels of one bulk apply in flight at once.
const IN_FLIGHT: usize = 16;

/// A bulk action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Retry,
    Cancel,
    Purge,
}

impl Action {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "retry" => Some(Self::Retry),
            "cancel" => Some(Self::Cancel),
            "purge" => Some(Self::Purge),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Cancel => "cancel",
            Self::Purge => "purge",
        }
    }

    /// Whether the action can change a task in this status.
    fn applies_to(self, status: TaskStatus) -> bool {
        match self {
            Self::Retry => matches!(status, TaskStatus::Failed | TaskStatus::Canceled),
            Self::Cancel => !status.is_terminal(),
            Self::Purge => status.is_terminal(),
        }
    }

    /// The statuses the action can change a task in.
    fn statuses(self) -> Vec<TaskStatus> {
        TaskStatus::ALL.into_iter().filter(|s| self.applies_to(*s)).collect()
    }
}

/// `?action=` of the preview.
#[derive(serde::Deserialize)]
pub(crate) struct ActionQuery {
    action: String,
}

/// `GET /tasks/preview?action=...&<filters>`: how many tasks the action
/// would change, and the button that applies it.
pub(crate) async fn preview(
    State(state): State<AppState>,
    ctx: PageCtx,
    Query(query): Query<TaskQuery>,
    Query(asked): Query<ActionQuery>,
) -> Response {
    let Some(action) = Action::parse(&asked.action) else {
        return refusal(&ctx, false, StatusCode::BAD_REQUEST, "action must be retry, cancel or purge");
    };
    if !state.writable() {
        return refusal(&ctx, false, StatusCode::FORBIDDEN, "this dashboard is read-only");
    }
    let selection = match query.selection() {
        Ok(selection) => selection,
        Err(error) => return error_page(&ctx, &error),
    };
    if action == Action::Purge && !selection.purgeable() {
        let message = "purge filters by queue, name and a terminal status only; clear the other filters";
        return refusal(&ctx, false, StatusCode::BAD_REQUEST, message);
    }
    let (affected, at_least) = match selection.count_in(&state.client, &action.statuses()).await {
        Ok(found) => found,
        Err(error) => return error_page(&ctx, &error),
    };
    let shown = if at_least { format!("{}+", count(affected)) } else { count(affected) };
    let capped = at_least || affected > MATCH_CAP as u64;
    let fields = query.set_fields();
    let body = html! {
        h1 { "Preview: " (action.as_str()) " all matching" }
        p #preview-count { strong { (shown) } " task(s) would be changed by " (action.as_str()) "." }
        @if capped { p.muted { "More than " (count(MATCH_CAP as u64)) " match; one apply changes the first " (count(MATCH_CAP as u64)) "." } }
        ul { @for (field, value) in &fields { li { (field) " = " code { (value) } } } }
        form method="post" action={ (ctx.base) "/tasks/bulk" } {
            input type="hidden" name="scope" value="matching";
            @for (field, value) in &fields { input type="hidden" name=(field) value=(value); }
            button #apply type="submit" name="action" value=(action.as_str()) { "Apply " (action.as_str()) " to " (shown) " task(s)" }
            " " a href={ (ctx.base) "/tasks?" (query_string(&query, &[])) } { "back" }
        }
    };
    layout(&ctx, "Preview", false, body)
}

/// `POST /tasks/bulk`: `action`, `scope=selected` with `id`s, or
/// `scope=matching` with the filters.
pub(crate) async fn apply(
    State(state): State<AppState>,
    ctx: PageCtx,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("");
    let Some(action) = Action::parse(field("action")) else {
        return refusal(&ctx, false, StatusCode::BAD_REQUEST, "action must be retry, cancel or purge");
    };
    let query = TaskQuery::from_pairs(&pairs);
    let done = match field("scope") {
        "selected" if action != Action::Purge => {
            let ids: Vec<&str> = pairs.iter().filter(|(k, _)| k == "id").map(|(_, v)| v.as_str()).collect();
            apply_to_ids(&state.client, action, &ids).await
        }
        "matching" => match query.selection() {
            Ok(selection) => apply_to_matching(&state.client, action, &selection).await,
            Err(error) => Err(error),
        },
        _ => {
            return refusal(&ctx, false, StatusCode::BAD_REQUEST, "scope must be selected (retry, cancel) or matching");
        }
    };
    match done {
        Ok(changed) => {
            // Back to the list the action was taken on (rebuilt from the
            // parsed fields: always a path on this dashboard).
            let notice = format!("{}: {} task(s) changed", action.as_str(), count(changed));
            let back = [("limit", query.value("limit")), ("after", query.value("after")), ("notice", &notice)];
            Redirect::to(&format!("{}/tasks?{}", ctx.base, query_string(&query, &back))).into_response()
        }
        Err(error) => error_page(&ctx, &error),
    }
}

/// Acts on each task with the library's own retry or cancel (as `cairnq
/// retry` and `cairnq cancel` do; a task that moved meanwhile is left
/// alone), several at once so a store that commits in groups writes them
/// in few transactions.
async fn apply_to_ids(client: &CairnQ, action: Action, ids: &[&str]) -> Result<u64> {
    // Owned ids: a stream of futures borrowing `ids` is not Send for every
    // lifetime the handler future needs (a known limit of the compiler).
    let owned: Vec<String> = ids.iter().map(|id| (*id).to_string()).collect();
    let mut acting = futures::stream::iter(owned)
        .map(|id| async move { act(client, action, &id).await })
        .buffer_unordered(IN_FLIGHT);
    let mut changed = 0;
    while let Some(outcome) = acting.next().await {
        if outcome?.is_some() {
            changed += 1;
        }
    }
    Ok(changed)
}

async fn apply_to_matching(client: &CairnQ, action: Action, selection: &Selection) -> Result<u64> {
    if action == Action::Purge {
        if !selection.purgeable() {
            return Err(cairnq_core::Error::validation(
                "action",
                "purge filters by queue, name and terminal status only",
            ));
        }
        let f = &selection.filter;
        let mut filter = PurgeFilter::new().limit(MATCH_CAP as u32);
        filter.queue = f.queue.clone();
        filter.name = f.name.clone();
        filter.status = f.status;
        return Ok(client.purge(&filter).await?.len() as u64);
    }
    let (tasks, _) = selection.all(client).await?;
    let ids: Vec<&str> = tasks.iter().filter(|t| action.applies_to(t.status)).map(|t| t.id.as_str()).collect();
    apply_to_ids(client, action, &ids).await
}

/// One task's retry or cancel; `None` when it did not apply.
async fn act(client: &CairnQ, action: Action, id: &str) -> Result<Option<Task>> {
    match action {
        Action::Retry => client.retry(id).await,
        Action::Cancel => client.cancel(id).await,
        Action::Purge => Ok(None),
    }
}
