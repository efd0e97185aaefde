//! [`Step`]: one durable step of a task as stored (extension
//! `ext_0009_steps`). A handler's step stores what it returned so a later
//! attempt of the same task reads it back instead of running the step
//! again; people see the stored steps beside the task (`cairnq get`, the
//! dashboard). The rule of which names a step gets lives here too, so the
//! worker and every reader agree on it.

use serde::{Deserialize, Serialize};

use crate::envelope::ErrorEnvelope;
use crate::error::{Error, Result, require_non_empty, require_text};
use crate::json::Json;

/// One stored step of a task: the value it returned, or the permanent
/// error it failed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The task it belongs to.
    pub task_id: String,
    /// The step's name within the task; the `n`-th use of one name within
    /// an attempt is stored as `name#n` (see [`Step::numbered`]).
    pub name: String,
    /// The attempt that stored it.
    pub attempt: u32,
    /// What the step returned (JSON `null` for nothing); `None` when it
    /// failed.
    pub result: Option<Json>,
    /// The error envelope of a permanent failure; `None` when it returned.
    pub error: Option<ErrorEnvelope>,
    /// When it was stored (epoch ms, the store's clock).
    pub created_at_ms: i64,
}

impl Step {
    /// The stored name of the `nth` use (from 1) of `name` within one
    /// attempt: the first keeps the name, later ones are numbered, so a
    /// loop of steps of one name stores one row per turn.
    ///
    /// ```
    /// use cairnq_core::Step;
    /// assert_eq!(Step::numbered("charge", 1), "charge");
    /// assert_eq!(Step::numbered("charge", 2), "charge#2");
    /// ```
    pub fn numbered(name: &str, nth: u32) -> String {
        if nth <= 1 { name.to_string() } else { format!("{name}#{nth}") }
    }

    /// Whether the step failed (permanently) rather than returned.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// Refuses a name a handler may not give a step: an empty one, one
/// holding a NUL character, or one holding `#`, which numbering keeps for
/// itself (a step named `charge#2` would take the second `charge`'s row).
///
/// ```
/// use cairnq_core::step_name;
/// assert!(step_name("charge").is_ok());
/// assert!(step_name("charge#2").is_err());
/// assert!(step_name("").is_err());
/// ```
pub fn step_name(name: &str) -> Result<()> {
    require_non_empty("step name", name)?;
    require_text("step name", name)?;
    if name.contains('#') {
        return Err(Error::validation("step name", format!("{name:?} holds '#', which numbers repeated steps")));
    }
    Ok(())
}
