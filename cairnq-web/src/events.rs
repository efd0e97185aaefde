//! `GET /events`: the server-sent event stream live pages listen to, one
//! `change` event each time the hub saw the queues change.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};

use crate::state::AppState;

/// `GET /events`.
pub(crate) async fn events(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = state.hub.changes().map(|version| Ok(Event::default().event("change").data(version.to_string())));
    Sse::new(changes).keep_alive(KeepAlive::default())
}
