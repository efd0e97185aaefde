//! The JSON API under `/api`, for the page script and for scripts: task
//! objects use the protocol's column names (cairnq_core's `Task`
//! serialization), schedules those of `cairnq_ext_schedules`, errors are
//! `{"error": "..."}` with a fitting status.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cairnq_core::{Error, Task};

use crate::filter::TaskQuery;
use crate::html::status_of;
use crate::schedule_ops::{Acted, ScheduleAction, ScheduleJson, act};
use crate::state::AppState;

fn failure(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

fn core_failure(error: &Error) -> Response {
    failure(status_of(error), &error.to_string())
}

/// `GET /api/stats`: counts per queue and status (every status present).
pub(crate) async fn stats(State(state): State<AppState>) -> Response {
    match state.client.stats(None).await {
        Ok(stats) => Json(stats).into_response(),
        Err(error) => core_failure(&error),
    }
}

/// `GET /api/tasks?status&queue&name&key&root&correlation&since&until&limit&after`:
/// `{"tasks": [...], "undecodable": [...], "next": "<cursor>" | null}`.
pub(crate) async fn list(State(state): State<AppState>, Query(query): Query<TaskQuery>) -> Response {
    let filter = match query.filter() {
        Ok(filter) => filter,
        Err(error) => return core_failure(&error),
    };
    match state.client.list(&filter).await {
        Ok(page) => Json(page).into_response(),
        Err(error) => core_failure(&error),
    }
}

/// `GET /api/tasks/{id}`.
pub(crate) async fn get(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    match state.client.get(&id).await {
        Ok(Some(task)) => Json(task).into_response(),
        Ok(None) => failure(StatusCode::NOT_FOUND, &format!("no task {id}")),
        Err(error) => core_failure(&error),
    }
}

/// `POST /api/tasks/{id}/retry`: the requeued task; 409 when it is not
/// failed or canceled.
pub(crate) async fn retry(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let outcome = state.client.retry(&id).await;
    acted(&state, &id, outcome, "is not failed or canceled").await
}

/// `POST /api/tasks/{id}/cancel`: the canceled task (or, when running, the
/// task with its cancel requested); 409 when it has already ended.
pub(crate) async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let outcome = state.client.cancel(&id).await;
    acted(&state, &id, outcome, "has already ended").await
}

/// The answer to an action: the task, 404 when it is missing, 409 when
/// the action did not apply to it.
async fn acted(state: &AppState, id: &str, outcome: cairnq_core::Result<Option<Task>>, refused: &str) -> Response {
    match outcome {
        Ok(Some(task)) => Json(task).into_response(),
        Ok(None) => match state.client.get_status(id).await {
            Ok(Some(now)) => failure(StatusCode::CONFLICT, &format!("task {id} {refused} (it is {})", now.status)),
            Ok(None) => failure(StatusCode::NOT_FOUND, &format!("no task {id}")),
            Err(error) => core_failure(&error),
        },
        Err(error) => core_failure(&error),
    }
}

/// `GET /api/schedules`: `{"schedules": [...]}`, by name; 501 on a store
/// that keeps no schedules.
pub(crate) async fn schedules(State(state): State<AppState>) -> Response {
    match state.client.schedules().await {
        Ok(all) => {
            let schedules: Vec<ScheduleJson<'_>> = all.iter().map(ScheduleJson::of).collect();
            Json(serde_json::json!({ "schedules": schedules })).into_response()
        }
        Err(error) => core_failure(&error),
    }
}

/// `POST /api/schedules/{name}/{pause|resume|trigger|delete}`: the schedule
/// after a pause or resume, `{"task": ...}` after a trigger, `{"deleted":
/// name}`; 404 when there is no such schedule, 409 for deleting one a
/// worker's code declares.
pub(crate) async fn schedule_action(
    State(state): State<AppState>,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    let Some(action) = ScheduleAction::parse(&action) else {
        return failure(StatusCode::NOT_FOUND, "the action must be pause, resume, trigger or delete");
    };
    match act(&state.client, &name, action).await {
        Ok(Ok(Acted::Changed(info))) => Json(ScheduleJson::of(&info)).into_response(),
        Ok(Ok(Acted::Fired(task))) => Json(serde_json::json!({ "task": task })).into_response(),
        Ok(Ok(Acted::Deleted)) => Json(serde_json::json!({ "deleted": name })).into_response(),
        Ok(Err(refused)) => failure(refused.status(), &refused.message(&name)),
        Err(error) => core_failure(&error),
    }
}
