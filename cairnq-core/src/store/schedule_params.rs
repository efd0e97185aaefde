//! Parameters of the schedule operations of the seam (extension
//! `ext_0001_schedules`, the book's "Schedules" chapter): the row as stored, in integer
//! milliseconds and stored names; `CairnQ` checks and computes everything
//! above it.

use crate::json::Json;
use crate::schedule_policy::{CatchUp, Overlap, ScheduleOwner};
use crate::store::NewTask;

/// One `cairnq_ext_schedules` row.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScheduleRow {
    /// Primary key.
    pub name: String,
    /// Name of the fired tasks.
    pub task_name: String,
    /// Queue of the fired tasks.
    pub queue: String,
    /// Payload of the fired tasks.
    pub payload: Json,
    /// Priority of the fired tasks.
    pub priority: i32,
    /// Attempts of the fired tasks.
    pub max_attempts: i32,
    /// Merged into the fired tasks' metadata.
    pub metadata: Json,
    /// Cron spec, alias or `@every`.
    pub spec: String,
    /// IANA zone name.
    pub tz: String,
    /// The next slot to fire (epoch ms).
    pub next_fire_ms: i64,
    /// The newest slot fired.
    pub last_slot_ms: Option<i64>,
    /// Slots passed over, in total.
    pub missed: i64,
    /// What a fire after an outage replays (stored as the `catch_up` name
    /// with `catch_up_window_ms` and `catch_up_max`).
    pub catch_up: CatchUp,
    /// Whether a slot fires while the previous fire's task is live.
    pub overlap: Overlap,
    /// The most random delay of a fired task.
    pub jitter_ms: i64,
    /// A paused schedule is never due.
    pub paused: bool,
    /// Who made it.
    pub owner: ScheduleOwner,
    /// Set by the store on insert.
    pub created_at_ms: i64,
    /// Set by the store on every write.
    pub updated_at_ms: i64,
}

impl ScheduleRow {
    /// A row named `name` and nothing else set yet (empty texts, `null`
    /// payload, `{}` metadata, zeros, the default policies, owned by the
    /// API): a backend reading rows back sets every field it stored.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            task_name: String::new(),
            queue: String::new(),
            payload: Json::null(),
            priority: 0,
            max_attempts: 0,
            metadata: Json::empty_object(),
            spec: String::new(),
            tz: String::new(),
            next_fire_ms: 0,
            last_slot_ms: None,
            missed: 0,
            catch_up: CatchUp::default(),
            overlap: Overlap::default(),
            jitter_ms: 0,
            paused: false,
            owner: ScheduleOwner::Api,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }
}

/// Which schedules to read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ScheduleQuery {
    /// Only this one.
    pub name: Option<String>,
    /// Only the unpaused ones whose next fire is at or before the store's now.
    pub due: bool,
}

impl ScheduleQuery {
    /// Every schedule, by name.
    pub fn all() -> Self {
        Self::default()
    }

    /// The schedule named `name`.
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: Some(name.into()), due: false }
    }

    /// The due schedules.
    pub fn due() -> Self {
        Self { name: None, due: true }
    }
}

/// Schedules as read, with the store's clock at the read (the database
/// clock on Postgres), which every decision of the pass uses.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScheduleRead {
    /// The store's now, epoch ms.
    pub now_ms: i64,
    /// The rows, by name.
    pub rows: Vec<ScheduleRow>,
}

impl ScheduleRead {
    /// A read at `now_ms`.
    pub fn new(now_ms: i64, rows: Vec<ScheduleRow>) -> Self {
        Self { now_ms, rows }
    }
}

/// Creates or updates a schedule. An update with the same spec and zone
/// keeps the stored `next_fire_ms`; paused, last slot and missed are never
/// changed by a save.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SaveScheduleParams {
    /// The row to write.
    pub row: ScheduleRow,
}

impl SaveScheduleParams {
    /// Saves `row`.
    pub fn new(row: ScheduleRow) -> Self {
        Self { row }
    }
}

/// Pauses or resumes a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PauseScheduleParams {
    /// The schedule.
    pub name: String,
    /// Paused after the write.
    pub paused: bool,
    /// The new next fire, when given.
    pub next_fire_ms: Option<i64>,
}

impl PauseScheduleParams {
    /// Pauses `name`.
    pub fn pause(name: impl Into<String>) -> Self {
        Self { name: name.into(), paused: true, next_fire_ms: None }
    }

    /// Resumes `name`.
    pub fn resume(name: impl Into<String>) -> Self {
        Self { name: name.into(), paused: false, next_fire_ms: None }
    }

    /// Moves the next fire too.
    pub fn next_fire_ms(mut self, next_fire_ms: i64) -> Self {
        self.next_fire_ms = Some(next_fire_ms);
        self
    }
}

/// Deletes a schedule (never its fired tasks).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteScheduleParams {
    /// The schedule.
    pub name: String,
}

impl DeleteScheduleParams {
    /// Deletes `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

/// One fire, in ONE transaction: if the row still has
/// `next_fire_ms == expected_ms` (and, with `unpaused_only`, is not
/// paused), set the next fire, last slot and add to missed, then submit
/// `tasks` (keyed submits); else change nothing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FireScheduleParams {
    /// The schedule.
    pub name: String,
    /// The next fire the firer read.
    pub expected_ms: i64,
    /// The next fire after this one.
    pub next_fire_ms: i64,
    /// The newest slot fired now, if any.
    pub last_slot_ms: Option<i64>,
    /// Slots passed over by this fire.
    pub missed: i64,
    /// Refuse a paused row (every fire but trigger-now).
    pub unpaused_only: bool,
    /// The tasks to submit.
    pub tasks: Vec<NewTask>,
}

impl FireScheduleParams {
    /// A fire of `name` holding `expected_ms`, moving it to `next_fire_ms`.
    pub fn new(name: impl Into<String>, expected_ms: i64) -> Self {
        Self {
            name: name.into(),
            expected_ms,
            next_fire_ms: expected_ms,
            last_slot_ms: None,
            missed: 0,
            unpaused_only: true,
            tasks: Vec::new(),
        }
    }

    /// The next fire after this one.
    pub fn next_fire_ms(mut self, next_fire_ms: i64) -> Self {
        self.next_fire_ms = next_fire_ms;
        self
    }

    /// The newest slot fired.
    pub fn last_slot_ms(mut self, last_slot_ms: Option<i64>) -> Self {
        self.last_slot_ms = last_slot_ms;
        self
    }

    /// Slots passed over.
    pub fn missed(mut self, missed: i64) -> Self {
        self.missed = missed;
        self
    }

    /// Fire even when paused (trigger-now).
    pub fn even_paused(mut self) -> Self {
        self.unpaused_only = false;
        self
    }

    /// The tasks to submit.
    pub fn tasks(mut self, tasks: Vec<NewTask>) -> Self {
        self.tasks = tasks;
        self
    }
}
