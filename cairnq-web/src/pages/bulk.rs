//! Bulk actions: retry or cancel the selected tasks, or retry / cancel /
//! purge every task matching the filters, after a preview page says how
//! many that is. Which tasks a retry or cancel of all matching takes, and
//! how many at most, is the library's one rule (`CairnQ::retry_matching` /
//! `cancel_matching`, as `cairnq retry` and `cairnq cancel` use it).

use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use cairnq_core::store::CountTasksParams;
use cairnq_core::{BulkAction, CairnQ, ListFilter, PurgeFilter, Result, Task, TaskStatus};
use futures::StreamExt;
use maud::html;

use crate::filter::{TaskQuery, query_string};
use crate::html::{PageCtx, count, error_page, layout, refusal};
use crate::state::AppState;

/// The most tasks one "apply to all matching" changes (the library's cap
/// argument), and so the most a preview counts: more show as "10,000+".
const MATCH_CAP: usize = 10_000;

/// Retries or cancels of selected rows in flight at once.
const IN_FLIGHT: usize = 16;

/// What a purge of all matching refuses, in the preview and on apply.
const PURGE_FILTERS: &str = "purge filters by queue, name and a terminal status only; clear the other filters";

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

    /// The library's retry or cancel of every task `filter` matches (`None`
    /// for a purge).
    fn matching<'a>(self, client: &'a CairnQ, filter: &ListFilter) -> Option<BulkAction<'a>> {
        match self {
            Self::Retry => Some(client.retry_matching(filter, MATCH_CAP)),
            Self::Cancel => Some(client.cancel_matching(filter, MATCH_CAP)),
            Self::Purge => None,
        }
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
    let filter = match query.filter() {
        Ok(filter) => filter,
        Err(error) => return error_page(&ctx, &error),
    };
    let counted = match (action.matching(&state.client, &filter), purge_filter(&filter)) {
        // The library counts up to the cap and one more.
        (Some(bulk), _) => bulk.count().await.map(|n| (n.min(MATCH_CAP as u64), n > MATCH_CAP as u64)),
        (None, Some(purge)) => purge_count(&state.client, &purge).await,
        (None, None) => return refusal(&ctx, false, StatusCode::BAD_REQUEST, PURGE_FILTERS),
    };
    let (affected, at_least) = match counted {
        Ok(counted) => counted,
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
        "matching" => match query.filter() {
            Ok(filter) => apply_to_matching(&state.client, action, &filter).await,
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

/// Acts on each selected task with the library's own retry or cancel (a
/// task that moved meanwhile is left alone), several at once so a store
/// that commits in groups writes them in few transactions.
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

/// Retries or cancels by the library's rule, or purges; how many tasks changed.
async fn apply_to_matching(client: &CairnQ, action: Action, filter: &ListFilter) -> Result<u64> {
    if let Some(bulk) = action.matching(client, filter) {
        return Ok(bulk.await?.tasks.len() as u64);
    }
    let Some(purge) = purge_filter(filter) else {
        return Err(cairnq_core::Error::validation("action", PURGE_FILTERS));
    };
    Ok(client.purge(&purge.limit(MATCH_CAP as u32)).await?.len() as u64)
}

/// The purge of what `filter` matches, when only the filters a purge
/// applies (queue, name, a terminal status) are set.
fn purge_filter(filter: &ListFilter) -> Option<PurgeFilter> {
    let purgeable = filter.key.is_none()
        && filter.created_since_ms.is_none()
        && filter.created_until_ms.is_none()
        && filter.root_id.is_none()
        && filter.correlation_id.is_none()
        && filter.after.is_none()
        && filter.status.is_none_or(TaskStatus::is_terminal);
    purgeable.then(|| {
        let mut purge = PurgeFilter::new();
        purge.queue = filter.queue.clone();
        purge.name = filter.name.clone();
        purge.status = filter.status;
        purge
    })
}

/// How many tasks `purge` would delete, and whether more than
/// [`MATCH_CAP`] might (the count is then a lower bound): exact from the
/// store's counts unless a name filters, else one bounded count per status.
async fn purge_count(client: &CairnQ, purge: &PurgeFilter) -> Result<(u64, bool)> {
    let statuses = TaskStatus::ALL.into_iter().filter(|s| s.is_terminal() && purge.status.is_none_or(|w| w == *s));
    if purge.name.is_none() {
        let stats = client.stats(purge.queue.as_deref()).await?;
        let total = statuses.map(|s| stats.values().map(|c| c.get(s)).sum::<u64>()).sum();
        return Ok((total, false));
    }
    let cap = MATCH_CAP as u64;
    let mut total = 0;
    for status in statuses {
        let mut filter = ListFilter::new().status(status);
        filter.queue = purge.queue.clone();
        filter.name = purge.name.clone();
        total += client.count_tasks(&CountTasksParams::new(filter, cap + 1)).await?;
    }
    Ok((total.min(cap), total > cap))
}

/// One task's retry or cancel; `None` when it did not apply.
async fn act(client: &CairnQ, action: Action, id: &str) -> Result<Option<Task>> {
    match action {
        Action::Retry => client.retry(id).await,
        Action::Cancel => client.cancel(id).await,
        Action::Purge => Ok(None),
    }
}
