//! What a backend was doing when its driver failed, said two ways.
//!
//! The person reading an error needs the operation in words and the cause
//! ("could not cancel the task: database is locked"); whoever debugs needs
//! the statement or pragma that failed (`cancel_task`). Statement names
//! are internal, so they stay out of `Display`: the message carries the
//! words ([`could_not`]), and the driver's error travels as `source()`
//! wrapped in a [`StepError`] that names the step, which `{:?}` and any
//! walk of the source chain show.

use std::error::Error as StdError;
use std::fmt;

use super::BoxError;

/// A driver's error with the backend step that met it (a statement's
/// `-- name:`, a pragma, `begin immediate`): the `source()` of a backend's
/// [`Error`](crate::Error), so the step is there for debugging without
/// being in the message people read.
///
/// ```
/// use cairnq_core::{Error, StepError, could_not};
/// let driver = std::io::Error::other("database is locked");
/// let message = could_not("cancel the task", &driver);
/// let error = Error::Storage { message, source: Some(Box::new(StepError::new("cancel_task", driver))), transient: true };
/// assert_eq!(error.to_string(), "storage error: could not cancel the task: database is locked");
/// assert!(format!("{error:?}").contains("cancel_task"));
/// let step = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<StepError>());
/// assert_eq!(step.map(StepError::step), Some("cancel_task"));
/// ```
#[derive(Debug)]
pub struct StepError {
    step: String,
    source: BoxError,
}

impl StepError {
    /// The driver's `source`, met while running `step`.
    pub fn new(step: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self { step: step.into(), source: source.into() }
    }

    /// The step's internal name (`cancel_task`, `synchronous`, ...).
    pub fn step(&self) -> &str {
        &self.step
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.source)
    }
}

impl StdError for StepError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// The one shape of a failed step's message: `could not {doing}: {cause}`,
/// `doing` in words ("cancel the task", "take the write lock").
pub fn could_not(doing: &str, cause: impl fmt::Display) -> String {
    format!("could not {doing}: {cause}")
}

/// The first error of type `T` in `error`'s source chain, `error` itself
/// included: a backend's driver error, whether kept bare or under a
/// [`StepError`].
pub fn find_cause<'a, T: StdError + 'static>(error: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(found) = current.downcast_ref::<T>() {
            return Some(found);
        }
        next = current.source();
    }
    None
}
