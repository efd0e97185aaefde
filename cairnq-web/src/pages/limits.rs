//! The limits page (README "Flow control"): every flow-control limit with
//! its bounds, the tasks running and waiting under it, how many keys it
//! governs and when its rate next admits a start, as `cairnq limit ls`
//! shows them. Read-only: limits are set from code or the command line,
//! where a typo cannot throttle a fleet by a stray click.

use axum::extract::State;
use axum::response::Response;
use cairnq_core::{ErrorKind, LimitStatus, human_duration};
use maud::{Markup, html};

use crate::html::{PageCtx, count, error_page, layout, when};
use crate::state::AppState;
use cairnq_core::now_ms;

/// `GET /limits`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx) -> Response {
    let statuses = match state.client.limit_statuses().await {
        Ok(statuses) => Some(statuses),
        Err(error) if error.kind() == ErrorKind::UnsupportedBackend => None,
        Err(error) => return error_page(&ctx, &error),
    };
    let body = html! {
        h1 { "Limits" }
        @match &statuses {
            None => p.muted { "This store keeps no limits." },
            Some(statuses) if statuses.is_empty() => {
                p.muted { "No limits set (" code { "cairnq limit set KEY --concurrency N" } ", or " code { "CairnQ::set_limit" } ")." }
            }
            Some(statuses) => {
                (table(statuses))
                p.muted {
                    "A key ending in " code { "*" } " is a default for every key with that prefix, each separately; "
                    "its counts add up its keys. Waiting tasks include delayed ones."
                }
            }
        }
    };
    layout(&ctx, "Limits", true, body)
}

fn table(statuses: &[LimitStatus]) -> Markup {
    let now = now_ms();
    let none = html! { span.muted { "—" } };
    html! {
        table #limits {
            thead { tr {
                th { "Key" } th.num { "Concurrency" } th { "Rate" } th.num { "Burst" } th.num { "Running" }
                th.num { "Waiting" } th.num { "Keys" } th { "Next start" } th { "Updated" }
            } }
            tbody {
                @for status in statuses {
                    @let limit = &status.info.limit;
                    tr data-limit=(limit.key) {
                        td { code { (limit.key) } }
                        td.num { @match limit.concurrency { Some(n) => (n), None => (none) } }
                        td { @match limit.rate { Some(r) => { (r.count) " per " (human_duration(r.period)) }, None => (none) } }
                        td.num { @match limit.burst { Some(n) => (n), None => (none) } }
                        td.num.running { (count(status.running)) }
                        td.num.waiting { (count(status.waiting)) }
                        td.num { (count(status.keys)) }
                        td.next { (when(status.next_admit_ms, now)) }
                        td { (when(Some(status.info.updated_at_ms), now)) }
                    }
                }
            }
        }
    }
}
