//! Business keys: what a keyed submit does when its key already points at a
//! task. Backends run this decision inside their key-locking transaction, so
//! the rule is written once for every dialect.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{TaskRef, TaskStatus};

/// The conflict strategy of a keyed submit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Conflict {
    /// Return the recorded task if it is queued or running; else insert a new
    /// one and repoint the key.
    #[default]
    #[serde(rename = "reuse")]
    Reuse,
    /// Like `Reuse`, and also return a succeeded task.
    #[serde(rename = "reuse-succeeded")]
    ReuseSucceeded,
    /// Fail with `AlreadyExists` if the key points at any task.
    #[serde(rename = "reject")]
    Reject,
    /// Cancel the recorded task if it is live, insert a new one, repoint.
    #[serde(rename = "replace")]
    Replace,
}

impl Conflict {
    /// The strategy as other SDKs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reuse => "reuse",
            Self::ReuseSucceeded => "reuse-succeeded",
            Self::Reject => "reject",
            Self::Replace => "replace",
        }
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Conflict {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        [Self::Reuse, Self::ReuseSucceeded, Self::Reject, Self::Replace]
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                Error::validation("conflict", format!("{s:?} is not reuse, reuse-succeeded, reject or replace"))
            })
    }
}

/// What a keyed submit does, decided from the key's current task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyedSubmit {
    /// Return the recorded task unchanged.
    ReturnExisting,
    /// Insert the new task and repoint the key; first cancel the recorded
    /// task (the ordinary cancel) when `cancel_existing`.
    Insert {
        /// The recorded task is live and must be canceled first (replace).
        cancel_existing: bool,
    },
}

/// Decides a keyed submit. `existing` is the task the key points at, or
/// `None` when the key is free (never used, or its task was purged).
///
/// ```
/// use cairnq_core::backend::{resolve_key_conflict, KeyedSubmit};
/// use cairnq_core::Conflict;
/// use cairnq_core::{TaskRef, TaskStatus};
/// let done = TaskRef { id: "task_1".into(), status: TaskStatus::Succeeded };
/// assert_eq!(resolve_key_conflict(Conflict::Reuse, "k", Some(&done)).unwrap(), KeyedSubmit::Insert { cancel_existing: false });
/// assert_eq!(resolve_key_conflict(Conflict::ReuseSucceeded, "k", Some(&done)).unwrap(), KeyedSubmit::ReturnExisting);
/// assert!(resolve_key_conflict(Conflict::Reject, "k", Some(&done)).is_err());
/// ```
pub fn resolve_key_conflict(conflict: Conflict, key: &str, existing: Option<&TaskRef>) -> Result<KeyedSubmit> {
    let Some(existing) = existing else {
        return Ok(KeyedSubmit::Insert { cancel_existing: false });
    };
    let live = matches!(existing.status, TaskStatus::Queued | TaskStatus::Running);
    Ok(match conflict {
        Conflict::Reuse if live => KeyedSubmit::ReturnExisting,
        Conflict::ReuseSucceeded if live || existing.status == TaskStatus::Succeeded => KeyedSubmit::ReturnExisting,
        Conflict::Reuse | Conflict::ReuseSucceeded => KeyedSubmit::Insert { cancel_existing: false },
        Conflict::Reject => {
            return Err(Error::AlreadyExists { key: key.to_string(), task_id: existing.id.clone() });
        }
        Conflict::Replace => KeyedSubmit::Insert { cancel_existing: live },
    })
}
