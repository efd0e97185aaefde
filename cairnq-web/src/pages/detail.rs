//! One task: every column, its relatives, and the retry and cancel buttons.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use cairnq_core::{CairnQ, DependencyFailure, Flow, Result, Step, Task, TaskWait, is_waiting, now_ms};
use maud::{Markup, html};

use crate::html::{
    PageCtx, error_page, json_block, layout, progress, refusal, status_badge, task_link, tasks_href, when,
};
use crate::state::AppState;

/// The most children listed on a task's page.
const CHILDREN_SHOWN: u32 = 200;

/// `GET /tasks/{id}`.
pub(crate) async fn page(State(state): State<AppState>, ctx: PageCtx, Path(id): Path<String>) -> Response {
    let task = match state.client.get(&id).await {
        Ok(Some(task)) => task,
        Ok(None) => return refusal(&ctx, false, StatusCode::NOT_FOUND, &format!("no task {id}")),
        Err(error) => return error_page(&ctx, &error),
    };
    let client = &state.client;
    let read = futures::try_join!(
        client.task_key(&id),
        client.children(&id, CHILDREN_SHOWN),
        client.steps(&id),
        client.flow(&id, super::flow::FLOW_SHOWN)
    );
    let (key, children, steps, flow) = match read {
        Ok(found) => found,
        Err(error) => return error_page(&ctx, &error),
    };
    let (wait, dependencies) = match dependencies(client, &id).await {
        Ok(found) => found,
        Err(error) => return error_page(&ctx, &error),
    };
    let related = Related { key, children: children.tasks, steps, wait, dependencies, flow };
    layout(&ctx, &task.id, true, body(&ctx, &task, &related, state.writable()))
}

/// What the page shows beside the row itself.
struct Related {
    /// The business key pointing at the task, if any.
    key: Option<String>,
    /// Tasks it submitted, newest first, at most [`CHILDREN_SHOWN`].
    children: Vec<Task>,
    /// Its durable steps, in the order stored.
    steps: Vec<Step>,
    /// How far along its wait is, for a task submitted after others.
    wait: Option<TaskWait>,
    /// The tasks it was submitted after, in the order named.
    dependencies: Vec<Task>,
    /// The flow of its root (`None` if the task went between the reads).
    flow: Option<Flow>,
}

/// The wait and dependencies of a task submitted after others (none for
/// any other task, nor on a store without dependencies).
async fn dependencies(client: &CairnQ, id: &str) -> Result<(Option<TaskWait>, Vec<Task>)> {
    let Some(wait) = client.task_wait(id).await? else { return Ok((None, Vec::new())) };
    Ok((Some(wait), client.dependencies(id).await?))
}

fn body(ctx: &PageCtx, task: &Task, related: &Related, writable: bool) -> Markup {
    let now = now_ms();
    let base = &ctx.base;
    html! {
        h1 { "Task " code #task-id { (task.id) } " " span #task-status { (status_badge(task.status)) } }
        @if writable {
            div.actions {
                @if matches!(task.status, cairnq_core::TaskStatus::Failed | cairnq_core::TaskStatus::Canceled) {
                    form method="post" action={ (base) "/tasks/" (task.id) "/retry" } { button #retry type="submit" { "Retry" } }
                }
                @if !task.is_terminal() {
                    form method="post" action={ (base) "/tasks/" (task.id) "/cancel" } { button #cancel type="submit" { "Cancel" } }
                }
            }
        }
        dl.fields {
            dt { "Name" } dd { (task.name) }
            dt { "Key" } dd #task-key { @match &related.key {
                Some(key) => a href=(tasks_href(ctx, &[("key", key)])) { code { (key) } },
                None => span.muted { "—" },
            } }
            dt { "Queue" } dd { a href=(tasks_href(ctx, &[("queue", &task.queue)])) { (task.queue) } }
            dt { "Attempts" } dd { (task.attempt) " of " (task.max_attempts) }
            dt { "Priority" } dd { (task.priority) }
            dt { "Progress" } dd { (progress(task)) }
            dt { "Worker (lease holder)" } dd { (task.worker_id.as_deref().unwrap_or("—")) }
            dt { "Lease until" } dd { (when(task.lease_until_ms, now)) }
            dt { "Cancel requested" } dd { (when(task.cancel_requested_at_ms, now)) }
            dt { "Created" } dd { (when(Some(task.created_at_ms), now)) }
            dt { "Started" } dd.muted {
                "not recorded: the protocol keeps no start time (a claim sets the lease above and Updated)"
            }
            @if let Some(wait) = &related.wait {
                dt { "Waits for" } dd #task-wait { @match wait.describe() {
                    Some(waiting) => (waiting),
                    None => { (wait.total) " " (if wait.total == 1 { "task" } else { "tasks" }) ", " (wait.remaining) " not ended" },
                } " · " (if wait.on_failure == DependencyFailure::Run { "runs even if one fails" } else { "canceled if one fails" }) }
            }
            dt { "Due (run at)" } dd { @if is_waiting(task) { "when its dependencies end" } @else { (when(Some(task.run_at_ms), now)) } }
            dt { "Updated" } dd { (when(Some(task.updated_at_ms), now)) }
            dt { "Finished" } dd { (when(task.completed_at_ms, now)) }
            dt { "Parent" } dd { @match &task.parent_id { Some(id) => (task_link(ctx, id)), None => "—" } }
            dt { "Root" } dd { @match &task.root_id {
                Some(id) => { (task_link(ctx, id)) " · " a href=(tasks_href(ctx, &[("root", id)])) { "whole chain" } }
                None => "—",
            } }
            dt { "Correlation" } dd { @match &task.correlation_id {
                Some(id) => a href=(tasks_href(ctx, &[("correlation", id)])) { (id) },
                None => "—",
            } }
        }
        h2 { "Payload" }
        (json_block(&task.payload))
        @if let Some(result) = &task.result { h2 { "Result" } (json_block(result)) }
        @if let Some(error) = &task.error { h2 { "Error" } div #error { (json_block(error)) } }
        @if !task.metadata.as_str().trim().eq("{}") { h2 { "Metadata" } (json_block(&task.metadata)) }
        @if !related.dependencies.is_empty() {
            h2 { "Dependencies" }
            ul #dependencies {
                @for dep in &related.dependencies { li { (task_link(ctx, &dep.id)) " " (dep.name) " " (status_badge(dep.status)) } }
            }
        }
        (super::steps::section(&related.steps, now))
        (super::flow::section(ctx, related.flow.as_ref(), &task.id))
        h2 { "Children" }
        @if related.children.is_empty() { p.muted { "None." } }
        ul #children {
            @for child in &related.children { li { (task_link(ctx, &child.id)) " " (child.name) " " (status_badge(child.status)) } }
        }
        @if related.children.len() >= CHILDREN_SHOWN as usize { p.muted { "The newest " (CHILDREN_SHOWN) " shown." } }
    }
}

/// `POST /tasks/{id}/retry` from the page.
pub(crate) async fn retry(State(state): State<AppState>, ctx: PageCtx, Path(id): Path<String>) -> Response {
    let outcome = state.client.retry(&id).await;
    after_action(&ctx, &id, outcome, "only a failed or canceled task can be retried")
}

/// `POST /tasks/{id}/cancel` from the page.
pub(crate) async fn cancel(State(state): State<AppState>, ctx: PageCtx, Path(id): Path<String>) -> Response {
    let outcome = state.client.cancel(&id).await;
    after_action(&ctx, &id, outcome, "only a queued or running task can be canceled")
}

fn after_action(ctx: &PageCtx, id: &str, outcome: Result<Option<Task>>, refused: &str) -> Response {
    match outcome {
        Ok(Some(_)) => Redirect::to(&format!("{}/tasks/{}", ctx.base, crate::href::segment(id))).into_response(),
        Ok(None) => refusal(ctx, false, StatusCode::CONFLICT, refused),
        Err(error) => error_page(ctx, &error),
    }
}
