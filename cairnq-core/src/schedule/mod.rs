//! Schedules (an extension of this SDK, the book's "Schedules" chapter): tasks submitted
//! by the clock, kept in the database so any number of processes can fire
//! them with no leader.
//!
//! A slot (one instant a spec names) fires in one store transaction that
//! moves the schedule's next fire on only if it still holds the slot read
//! (compare-and-set) and inserts an ordinary task keyed
//! `schedule:NAME:SLOT_MS`: of many processes exactly one wins each slot,
//! and any SDK's worker runs the task. What is written here is everything
//! above the seam: specs, policies, the plan of one fire.

mod plan;
mod spec;

use std::time::Duration;

use serde::Serialize;

use crate::clock::span_ms;
use crate::error::{Error, Result};
use crate::json::Json;
use crate::store::ScheduleRow;

pub use crate::schedule_policy::{CatchUp, Overlap, ScheduleOwner};
pub(crate) use plan::{FirePlan, plan_fire};
pub use spec::{MIN_INTERVAL, ScheduleSpec};

/// A schedule's definition: what to submit, and when.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::{CatchUp, Overlap, Schedule};
/// let nightly = Schedule::cron("nightly-report", "0 3 * * *", "report")?
///     .tz("Europe/Berlin")?
///     .payload(&serde_json::json!({"kind": "daily"}))?
///     .queue("reports")
///     .catch_up(CatchUp::Skip)
///     .overlap(Overlap::Skip)
///     .jitter(Duration::from_secs(5));
/// assert_eq!(nightly.spec.tz(), "Europe/Berlin");
/// let tick = Schedule::every("tick", Duration::from_secs(30), "tick")?;
/// assert_eq!(tick.spec.as_str(), "@every 30s");
/// # Ok::<(), cairnq_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Schedule {
    /// Unique name; the task keys carry it.
    pub name: String,
    /// The task name each fire submits.
    pub task: String,
    /// When it fires.
    pub spec: ScheduleSpec,
    /// The payload of every fired task.
    pub payload: Json,
    /// Queue of the fired tasks.
    pub queue: String,
    /// Priority of the fired tasks.
    pub priority: i32,
    /// Attempts of the fired tasks (1 up to `i32::MAX`).
    pub max_attempts: u32,
    /// A JSON object merged into each fired task's metadata (under the
    /// schedule's own `schedule` and `schedule_slot_ms` entries).
    pub metadata: Json,
    /// After downtime.
    pub catch_up: CatchUp,
    /// While the previous fire's task is live.
    pub overlap: Overlap,
    /// Each fired task waits a random delay up to this.
    pub jitter: Duration,
}

impl Schedule {
    /// Fires `task` on a cron spec or alias (`0 3 * * *`, `*/10 * * * * *`,
    /// `@daily`, or `@every 90s`), in UTC until [`tz`](Self::tz) says otherwise.
    pub fn cron(name: impl Into<String>, spec: &str, task: impl Into<String>) -> Result<Self> {
        Self::with_spec(name, ScheduleSpec::parse(spec, "UTC")?, task)
    }

    /// Fires `task` every `interval` (slots are multiples of it since the epoch).
    pub fn every(name: impl Into<String>, interval: Duration, task: impl Into<String>) -> Result<Self> {
        Self::with_spec(name, ScheduleSpec::every(interval)?, task)
    }

    /// Fires `task` on `spec`.
    pub fn with_spec(name: impl Into<String>, spec: ScheduleSpec, task: impl Into<String>) -> Result<Self> {
        let (name, task) = (name.into(), task.into());
        for (field, value) in [("name", &name), ("task", &task)] {
            if value.trim().is_empty() || value.contains('\0') {
                return Err(Error::validation(field, "must be non-empty text without NUL"));
            }
        }
        Ok(Self {
            name,
            task,
            spec,
            payload: Json::empty_object(),
            queue: "default".to_string(),
            priority: 0,
            max_attempts: 3,
            metadata: Json::empty_object(),
            catch_up: CatchUp::default(),
            overlap: Overlap::default(),
            jitter: Duration::ZERO,
        })
    }

    /// Interprets the cron spec in the IANA zone `tz`.
    pub fn tz(mut self, tz: &str) -> Result<Self> {
        self.spec = ScheduleSpec::parse(self.spec.as_str(), tz)?;
        Ok(self)
    }

    /// The payload of every fired task.
    pub fn payload<P: Serialize + ?Sized>(mut self, payload: &P) -> Result<Self> {
        self.payload = Json::encode(payload)?;
        Ok(self)
    }

    /// Queue of the fired tasks.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    /// Priority of the fired tasks.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Attempts of the fired tasks.
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// A JSON object merged into each fired task's metadata.
    pub fn metadata(mut self, metadata: impl Into<Json>) -> Self {
        self.metadata = metadata.into();
        self
    }

    /// After downtime.
    pub fn catch_up(mut self, catch_up: CatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }

    /// While the previous fire's task is live.
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// A random delay up to `jitter` for each fired task (at most
    /// [`MAX_DELAY`](crate::MAX_DELAY), else the schedule is refused).
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// The row to store: checked, with `next_fire_ms` as given.
    pub(crate) fn to_row(&self, owner: ScheduleOwner, next_fire_ms: i64) -> Result<ScheduleRow> {
        if self.queue.trim().is_empty() || self.queue.contains('\0') {
            return Err(Error::validation("queue", "must be non-empty text without NUL"));
        }
        if !self.metadata.is_object() {
            return Err(Error::validation("metadata", "must be a JSON object"));
        }
        let max_attempts = i32::try_from(self.max_attempts)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Error::validation("max_attempts", "must be 1 up to i32::MAX"))?;
        let ms = |field: &'static str, d: Duration| {
            i64::try_from(d.as_millis()).map_err(|_| Error::validation(field, "is too long to store"))
        };
        if let CatchUp::All { window, .. } = self.catch_up {
            ms("catch_up_window", window)?;
        }
        Ok(ScheduleRow {
            name: self.name.clone(),
            task_name: self.task.clone(),
            queue: self.queue.clone(),
            payload: self.payload.clone(),
            priority: self.priority,
            max_attempts,
            metadata: self.metadata.clone(),
            spec: self.spec.as_str().to_string(),
            tz: self.spec.tz().to_string(),
            next_fire_ms,
            last_slot_ms: None,
            missed: 0,
            catch_up: self.catch_up,
            overlap: self.overlap,
            // A fired task is delayed up to the jitter: refused here if a
            // fire could not submit it.
            jitter_ms: span_ms("jitter", self.jitter)?,
            paused: false,
            owner,
            created_at_ms: 0,
            updated_at_ms: 0,
        })
    }
}

/// A stored schedule: its definition and its firing state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScheduleInfo {
    /// The definition.
    pub schedule: Schedule,
    /// The next slot to fire (epoch ms, UTC).
    pub next_fire_ms: i64,
    /// The newest slot fired, if any.
    pub last_slot_ms: Option<i64>,
    /// Slots not fired (catch-up skip, overlap skip), in total.
    pub missed: u64,
    /// Paused schedules do not fire.
    pub paused: bool,
    /// Who made it.
    pub owner: ScheduleOwner,
    /// When it was last changed (epoch ms).
    pub updated_at_ms: i64,
}

impl ScheduleInfo {
    /// Checks a stored row (a broken writer may have left anything): a row
    /// this build cannot read is a storage error naming the schedule.
    pub fn from_row(row: &ScheduleRow) -> Result<Self> {
        Self::decode(row).map_err(|e| Error::corrupt_row(format!("schedule {}: {e}", row.name)))
    }

    fn decode(row: &ScheduleRow) -> Result<Self> {
        let spec = ScheduleSpec::parse(&row.spec, &row.tz)?;
        let schedule = Schedule {
            catch_up: row.catch_up,
            overlap: row.overlap,
            payload: row.payload.clone(),
            queue: row.queue.clone(),
            priority: row.priority,
            max_attempts: u32::try_from(row.max_attempts).unwrap_or(1).max(1),
            metadata: row.metadata.clone(),
            jitter: Duration::from_millis(u64::try_from(row.jitter_ms).unwrap_or(0)),
            ..Schedule::with_spec(row.name.clone(), spec, row.task_name.clone())?
        };
        Ok(Self {
            schedule,
            next_fire_ms: row.next_fire_ms,
            last_slot_ms: row.last_slot_ms,
            missed: u64::try_from(row.missed).unwrap_or(0),
            paused: row.paused,
            owner: row.owner,
            updated_at_ms: row.updated_at_ms,
        })
    }
}

/// The key of the task fired for `slot_ms`.
pub fn slot_key(name: &str, slot_ms: i64) -> String {
    format!("schedule:{name}:{slot_ms}")
}
