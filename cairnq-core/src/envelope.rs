//! Error envelopes: the JSON object recorded in a failed attempt's `error`
//! column, shared by every cairnq SDK.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::json::Json;
use crate::model::{Task, Undecodable};

/// The envelope codes PROTOCOL.md defines.
pub mod codes {
    /// A handler returned an error; `type` is the error's type name.
    pub const HANDLER_ERROR: &str = "handler_error";
    /// A handler's own `TaskError` without a code of its own.
    pub const TASK_ERROR: &str = "task_error";
    /// The attempt outran `max_run`; retryable.
    pub const HANDLER_TIMEOUT: &str = "handler_timeout";
    /// The worker has no handler for the task's name; permanent.
    pub const NO_HANDLER: &str = "no_handler";
    /// The handler's result could not be stored as JSON; permanent.
    pub const UNSERIALIZABLE_RESULT: &str = "unserializable_result";
    /// The lease expired and no attempts were left.
    pub const LEASE_EXPIRED: &str = "lease_expired";
    /// The claimed row could not be decoded (a foreign or corrupted writer);
    /// permanent. `details` name the column and the reason.
    pub const UNDECODABLE_ROW: &str = "undecodable_row";
}

/// `{"type", "code", "message", "retryable", "details"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    /// The error's type name (e.g. `ValueError`, `LeaseExpired`, a Rust type).
    #[serde(rename = "type")]
    pub error_type: String,
    /// A stable machine-readable code, see [`codes`].
    pub code: String,
    /// Human-readable text.
    pub message: String,
    /// Whether the failure was considered retryable.
    pub retryable: bool,
    /// Extra structured context (a JSON object).
    #[serde(default = "empty_object")]
    pub details: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ErrorEnvelope {
    /// A permanent envelope (no attempt follows) of type `Error` with empty
    /// details; set the rest with the setters. [`retryable`](Self::retryable)
    /// makes one that lets another attempt follow.
    ///
    /// ```
    /// use cairnq_core::ErrorEnvelope;
    /// let e = ErrorEnvelope::new("invalid_input", "no width").error_type("BadInput");
    /// assert_eq!(e.to_value()["type"], "BadInput");
    /// assert!(!e.retryable);
    /// ```
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error_type: "Error".to_string(),
            code: code.into(),
            message: message.into(),
            retryable: false,
            details: empty_object(),
        }
    }

    /// A retryable envelope (another attempt follows while attempts are
    /// left), otherwise as [`new`](Self::new).
    ///
    /// ```
    /// use cairnq_core::ErrorEnvelope;
    /// let e = ErrorEnvelope::retryable("handler_timeout", "too slow").error_type("Timeout");
    /// assert!(e.retryable);
    /// assert_eq!(e.to_value()["retryable"], true);
    /// ```
    pub fn retryable(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { retryable: true, ..Self::new(code, message) }
    }

    /// The same envelope with another type name.
    pub fn error_type(mut self, error_type: impl Into<String>) -> Self {
        self.error_type = error_type.into();
        self
    }

    /// The same envelope with `details` set.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// What lease recovery records on a task whose attempts ran out.
    pub fn lease_expired() -> Self {
        Self::new(codes::LEASE_EXPIRED, "task lease expired and max attempts reached").error_type("LeaseExpired")
    }

    /// What a claim records on a row it drew but could not decode: the
    /// task fails at once instead of stalling every claim after it.
    pub fn undecodable(row: &Undecodable) -> Self {
        let message = format!("the stored task cannot be decoded: column {:?}: {}", row.column, row.reason);
        let details = serde_json::json!({"column": row.column, "reason": row.reason});
        Self::new(codes::UNDECODABLE_ROW, message).error_type("UndecodableRow").with_details(details)
    }

    /// The envelope as stored JSON.
    pub fn to_json(&self) -> Json {
        Json::from(self.to_value())
    }

    /// The envelope as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), Value::String(self.error_type.clone()));
        map.insert("code".into(), Value::String(self.code.clone()));
        map.insert("message".into(), Value::String(self.message.clone()));
        map.insert("retryable".into(), Value::Bool(self.retryable));
        map.insert("details".into(), self.details.clone());
        Value::Object(map)
    }

    /// Reads an envelope back; `None` when the value is not one (an SDK
    /// may have written something else: never a panic).
    pub fn from_json(json: &Json) -> Option<Self> {
        json.decode().ok()
    }

    /// The [`Error::TaskFailed`] a caller sees for a task that ended with
    /// this envelope.
    pub fn into_task_failed(self, task_id: impl Into<String>) -> Error {
        Error::TaskFailed {
            task_id: task_id.into(),
            error_type: self.error_type,
            code: self.code,
            message: self.message,
            retryable: self.retryable,
            details: self.details,
        }
    }
}

impl Task {
    /// The error envelope, when one is recorded and well-formed.
    pub fn error_envelope(&self) -> Option<ErrorEnvelope> {
        self.error.as_ref().and_then(ErrorEnvelope::from_json)
    }
}
