//! [`TaskError`]: what a handler's failure becomes in the task's error
//! envelope, and whether another attempt may follow.
//!
//! Any `std::error::Error` converts into it (code `handler_error`, type =
//! the error's type name, retryable), so handlers can use `?` freely. One
//! built on purpose is permanent unless it says otherwise, as in the other
//! cairnq SDKs: an error a handler names itself is usually deterministic (a
//! declined card, a malformed document), and retrying it only burns
//! attempts. [`TaskError::retryable`] opts into retries.

use std::fmt;

use cairnq_core::{ErrorEnvelope, codes};
use serde_json::{Map, Value};

/// A handler failure, recorded as the task's error envelope.
///
/// It deliberately does not implement `std::error::Error`, so that every
/// error type converts into it with `?` (the same trick `anyhow` uses).
///
/// ```
/// use cairnq_worker::TaskError;
/// let permanent = TaskError::new("card declined").code("payment_declined");
/// assert!(!permanent.is_retryable());
/// let transient = TaskError::retryable("rate limited, try later");
/// assert!(transient.is_retryable());
/// let from_io: TaskError = std::io::Error::other("disk full").into();
/// assert_eq!(from_io.envelope().error_type, "Error");
/// assert_eq!(from_io.envelope().code, "handler_error");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TaskError {
    envelope: ErrorEnvelope,
}

impl TaskError {
    /// A permanent failure (code `task_error`, type `TaskError`): the task
    /// fails now, whatever attempts are left.
    pub fn new(message: impl Into<String>) -> Self {
        Self { envelope: ErrorEnvelope::new(codes::TASK_ERROR, message).error_type("TaskError") }
    }

    /// A retryable failure (code `task_error`, type `TaskError`): the task is
    /// queued again after the worker's backoff while attempts are left.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self { envelope: ErrorEnvelope::retryable(codes::TASK_ERROR, message).error_type("TaskError") }
    }

    /// The same error with another envelope code.
    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.envelope.code = code.into();
        self
    }

    /// The same error with another envelope type.
    pub fn error_type(mut self, error_type: impl Into<String>) -> Self {
        self.envelope.error_type = error_type.into();
        self
    }

    /// The same error with a JSON object of details (anything else is
    /// wrapped as `{"value": ...}` so the envelope stays well-formed).
    pub fn details(mut self, details: Value) -> Self {
        self.envelope.details = match details {
            Value::Object(_) => details,
            other => Value::Object(Map::from_iter([("value".to_string(), other)])),
        };
        self
    }

    /// Whether another attempt may follow.
    pub fn is_retryable(&self) -> bool {
        self.envelope.retryable
    }

    /// The envelope recorded on the task.
    pub fn envelope(&self) -> &ErrorEnvelope {
        &self.envelope
    }

    /// A failure described by a ready envelope (its `retryable` decides).
    ///
    /// ```
    /// use cairnq_core::ErrorEnvelope;
    /// use cairnq_worker::TaskError;
    /// let error = TaskError::from_envelope(ErrorEnvelope::retryable("quota", "out of credits"));
    /// assert!(error.is_retryable());
    /// ```
    pub fn from_envelope(envelope: ErrorEnvelope) -> Self {
        Self { envelope }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.envelope.code, self.envelope.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for TaskError {
    fn from(error: E) -> Self {
        let envelope =
            ErrorEnvelope::retryable(codes::HANDLER_ERROR, error.to_string()).error_type(short_type_name::<E>());
        Self { envelope }
    }
}

/// `std::num::ParseIntError` -> `ParseIntError`; generics are dropped
/// (`Wrapper<Inner>` -> `Wrapper`), matching how other SDKs name a type.
pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let without_generics = full.split('<').next().unwrap_or(full);
    without_generics.rsplit("::").next().unwrap_or(without_generics)
}

#[cfg(test)]
mod tests {
    //! Type names and conversions.

    use super::*;

    #[test]
    fn std_errors_become_retryable_handler_errors_named_by_type() {
        let parse = "x".parse::<i32>().map_err(TaskError::from).err();
        let envelope = parse.map(|e| e.envelope().clone());
        assert_eq!(envelope.as_ref().map(|e| e.error_type.as_str()), Some("ParseIntError"));
        assert_eq!(envelope.map(|e| e.retryable), Some(true));
    }

    #[test]
    fn non_object_details_are_wrapped() {
        let e = TaskError::new("x").details(serde_json::json!(3));
        assert_eq!(e.envelope().details, serde_json::json!({"value": 3}));
    }
}
