//! A schedule's policies and owner as the seam stores them: what a fire
//! after an outage replays, whether slots overlap a live fire, and who made
//! the schedule. Their own module because both the definition (`schedule`)
//! and the seam's row (`store::ScheduleRow`) hold them, and neither may
//! import the other.

use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};

/// What a schedule does about slots that passed while nobody fired them
/// (every process was down), beyond the on-time grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CatchUp {
    /// Fire none of them; count them as missed.
    Skip,
    /// Fire once, for the newest missed slot; count the rest as missed.
    #[default]
    Latest,
    /// Fire every missed slot not older than `window`, the newest `max` of
    /// them, oldest first; count the rest as missed.
    All {
        /// How far back missed slots are replayed.
        window: Duration,
        /// The most slots one catch-up replays.
        max: u32,
    },
}

impl CatchUp {
    /// `all` with its defaults: one hour back, at most 100 slots.
    pub fn all() -> Self {
        Self::All { window: Duration::from_secs(3600), max: 100 }
    }

    /// The stored name: `skip`, `latest` or `all`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Latest => "latest",
            Self::All { .. } => "all",
        }
    }

    /// The stored columns: the name (`skip`, `latest` or `all`), the
    /// window in milliseconds and the cap (`all`'s defaults for the others,
    /// as the columns' defaults are).
    pub fn stored(&self) -> (&'static str, i64, i64) {
        let (window, max) = match self {
            Self::All { window, max } => (*window, *max),
            _ => (Duration::from_secs(3600), 100),
        };
        (self.as_str(), i64::try_from(window.as_millis()).unwrap_or(i64::MAX), i64::from(max))
    }

    /// From the stored columns (see [`CatchUp::stored`]); a negative
    /// window or cap reads as zero.
    pub fn from_stored(name: &str, window_ms: i64, max: i64) -> Result<Self> {
        Ok(match Self::parse(name)? {
            Self::All { .. } => Self::All {
                window: Duration::from_millis(u64::try_from(window_ms).unwrap_or(0)),
                max: u32::try_from(max.max(0)).unwrap_or(u32::MAX),
            },
            other => other,
        })
    }

    /// Parses `skip`, `latest` or `all` (with the default window and cap).
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "skip" => Ok(Self::Skip),
            "latest" => Ok(Self::Latest),
            "all" => Ok(Self::all()),
            other => Err(Error::validation("catch_up", format!("{other:?}: expected skip, latest or all"))),
        }
    }
}

/// Whether a slot fires while the task of the previous fire is still live
/// (queued or running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overlap {
    /// Fire regardless.
    #[default]
    Allow,
    /// Do not fire; count the slot as missed.
    Skip,
}

impl Overlap {
    /// The stored name: `allow` or `skip`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Skip => "skip",
        }
    }

    /// Parses `allow` or `skip`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "allow" => Ok(Self::Allow),
            "skip" => Ok(Self::Skip),
            other => Err(Error::validation("overlap", format!("{other:?}: expected allow or skip"))),
        }
    }
}

/// Who made a schedule: declared in a worker's code (upserted at every
/// start) or through the API or CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScheduleOwner {
    /// Declared on a worker.
    Code,
    /// Saved through `CairnQ::save_schedule` or the CLI.
    Api,
}

impl ScheduleOwner {
    /// The stored name: `code` or `api`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Api => "api",
        }
    }

    /// From the stored name: anything but `code` is the API's (a row of
    /// unknown origin may be deleted, never silently claimed by code).
    pub fn from_stored(name: &str) -> Self {
        if name == "code" { Self::Code } else { Self::Api }
    }
}
