//! What the schedules page and `/api/schedules` share: the actions on one
//! schedule (pause, resume, trigger now, delete), done through the client
//! as `cairnq schedule` does them, and a schedule as JSON with the
//! `cairnq_ext_schedules` column names.

use axum::http::StatusCode;
use cairnq_core::{CairnQ, Result, ScheduleInfo, ScheduleOwner, Task};
use serde::Serialize;

/// An action on one schedule, as its path segment names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScheduleAction {
    Pause,
    Resume,
    Trigger,
    Delete,
}

impl ScheduleAction {
    /// `pause`, `resume`, `trigger` or `delete`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "pause" => Some(Self::Pause),
            "resume" => Some(Self::Resume),
            "trigger" => Some(Self::Trigger),
            "delete" => Some(Self::Delete),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Trigger => "trigger",
            Self::Delete => "delete",
        }
    }
}

/// What an action did.
#[derive(Debug)]
pub(crate) enum Acted {
    /// Paused or resumed: the schedule after.
    Changed(Box<ScheduleInfo>),
    /// Triggered: the task it submitted.
    Fired(Box<Task>),
    /// Deleted.
    Deleted,
}

/// Why an action did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No schedule has this name.
    Missing,
    /// Declared in a worker's code: the worker would declare it again at its
    /// next start, so it is removed from the code, not from here.
    CodeOwned,
}

impl Refused {
    /// The HTTP status it answers with.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Self::Missing => StatusCode::NOT_FOUND,
            Self::CodeOwned => StatusCode::CONFLICT,
        }
    }

    pub(crate) fn message(self, name: &str) -> String {
        match self {
            Self::Missing => format!("no schedule {name}"),
            Self::CodeOwned => format!(
                "schedule {name} is declared in a worker's code, which declares it again at its next start: \
                 remove it there"
            ),
        }
    }
}

/// Does `action` to the schedule `name`.
pub(crate) async fn act(client: &CairnQ, name: &str, action: ScheduleAction) -> Result<Result<Acted, Refused>> {
    let changed =
        |found: Option<ScheduleInfo>| found.map(|info| Acted::Changed(Box::new(info))).ok_or(Refused::Missing);
    Ok(match action {
        ScheduleAction::Pause => changed(client.pause_schedule(name).await?),
        ScheduleAction::Resume => changed(client.resume_schedule(name).await?),
        ScheduleAction::Trigger => {
            client.trigger_schedule(name).await?.map(|task| Acted::Fired(Box::new(task))).ok_or(Refused::Missing)
        }
        ScheduleAction::Delete => match client.schedule(name).await? {
            None => Err(Refused::Missing),
            Some(info) if info.owner == ScheduleOwner::Code => Err(Refused::CodeOwned),
            Some(_) => {
                client.delete_schedule(name).await?;
                Ok(Acted::Deleted)
            }
        },
    })
}

/// A schedule as the API writes it: the columns of `cairnq_ext_schedules`.
#[derive(Debug, Serialize)]
pub(crate) struct ScheduleJson<'a> {
    name: &'a str,
    task_name: &'a str,
    queue: &'a str,
    payload: serde_json::Value,
    priority: i32,
    max_attempts: u32,
    metadata: serde_json::Value,
    spec: &'a str,
    tz: &'a str,
    /// `None` when the spec names no further slot.
    next_fire_ms: Option<i64>,
    last_slot_ms: Option<i64>,
    missed: u64,
    catch_up: &'static str,
    overlap: &'static str,
    jitter_ms: u64,
    paused: bool,
    owner: &'static str,
    updated_at_ms: i64,
}

impl<'a> ScheduleJson<'a> {
    pub(crate) fn of(info: &'a ScheduleInfo) -> Self {
        let s = &info.schedule;
        let value = |json: &cairnq_core::Json| json.to_value().unwrap_or(serde_json::Value::Null);
        Self {
            name: &s.name,
            task_name: &s.task,
            queue: &s.queue,
            payload: value(&s.payload),
            priority: s.priority,
            max_attempts: s.max_attempts,
            metadata: value(&s.metadata),
            spec: s.spec.as_str(),
            tz: s.spec.tz(),
            next_fire_ms: next_fire(info),
            last_slot_ms: info.last_slot_ms,
            missed: info.missed,
            catch_up: s.catch_up.as_str(),
            overlap: s.overlap.as_str(),
            jitter_ms: u64::try_from(s.jitter.as_millis()).unwrap_or(u64::MAX),
            paused: info.paused,
            owner: info.owner.as_str(),
            updated_at_ms: info.updated_at_ms,
        }
    }
}

/// The next slot, or `None` when the spec names none (stored as the
/// largest time there is).
pub(crate) fn next_fire(info: &ScheduleInfo) -> Option<i64> {
    (info.next_fire_ms != i64::MAX).then_some(info.next_fire_ms)
}
