//! The one error type of cairnq's core layer.
//!
//! Every variant is a kind from PROTOCOL.md that callers can match on, so code
//! that handles `QueueFull` or `TaskFailed` works the same on every backend.
//! Backends translate their native errors into [`Error::Storage`] (or a more
//! specific kind) in one place each.
//!
//! One question cuts across the kinds: can waiting help? A dropped
//! connection or a locked file heals by itself, so a worker backs off and
//! tries again. A read-only or corrupted file, a missing privilege or a
//! database of another protocol does not: [`Error::is_unusable`] says so,
//! and each backend decides it in its one translation place, so callers
//! (the worker's claim loop) never parse driver text.

use std::time::Duration;

use serde_json::Value;

use crate::json::JsonError;
use crate::model::{ParseCursorError, Task, Undecodable, UnknownStatus};

mod step;

pub use step::{StepError, could_not, find_cause};

/// A boxed error from a backend's driver, kept as the `source()` of
/// [`Error::Storage`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with cairnq's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a cairnq operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A keyed submit with `Conflict::Reject` found a task already recorded
    /// for the key (in any state).
    #[error("a task already exists for key {key:?}: {task_id}")]
    AlreadyExists {
        /// The business key.
        key: String,
        /// The task the key points at.
        task_id: String,
    },
    /// Backpressure: the queue had no headroom for the whole wait budget.
    #[error("queue {queue:?} is full: it held {max_depth} queued tasks, its limit, for {}", seconds(*waited))]
    QueueFull {
        /// The queue that is full.
        queue: String,
        /// Its depth limit (queued tasks, delayed ones included).
        max_depth: u64,
        /// How long the submit waited for headroom.
        waited: Duration,
    },
    /// `wait` / `call` ran out of time. The task is not touched and keeps
    /// running; wait again to pick it up. `diagnosis` says what the last
    /// snapshot suggests (never claimed, delayed, retrying, running, ...).
    #[error("{} is not finished after {} (it keeps running): {diagnosis}", waited_for(task_id.as_deref(), key.as_deref()), seconds(*timeout))]
    TaskTimeout {
        /// The task waited for, when its id is known.
        task_id: Option<String>,
        /// The business key waited on, for a wait by key.
        key: Option<String>,
        /// The timeout that elapsed.
        timeout: Duration,
        /// The task as last read, when one was visible.
        last_seen: Option<Box<Task>>,
        /// What the snapshot suggests, for whoever reads the error.
        diagnosis: String,
    },
    /// The task ended `failed`; the fields are its error envelope unpacked.
    #[error("task {task_id} failed: {code}: {message}")]
    TaskFailed {
        /// The failed task.
        task_id: String,
        /// The envelope's `type` (e.g. the handler's error type name).
        error_type: String,
        /// The envelope's `code`, e.g. `handler_error` or `lease_expired`.
        code: String,
        /// The envelope's human-readable message.
        message: String,
        /// Whether the failure was considered retryable.
        retryable: bool,
        /// The envelope's `details` object.
        details: Value,
    },
    /// The task ended `canceled`.
    #[error("task {task_id} was canceled")]
    TaskCanceled {
        /// The canceled task.
        task_id: String,
    },
    /// An ownership-checked worker write matched no row: the task is not
    /// running under this worker with a live lease any more.
    #[error("worker {worker_id} does not hold a live lease on task {task_id}")]
    LostLease {
        /// The task whose lease was lost.
        task_id: String,
        /// The worker that tried to write.
        worker_id: String,
    },
    /// The database speaks another protocol version; nothing was written.
    #[error("database protocol_version is {found:?}, this SDK speaks {expected}")]
    ProtocolVersionMismatch {
        /// What `cairnq_meta.protocol_version` holds (or a description).
        found: String,
        /// The version this SDK speaks.
        expected: u32,
    },
    /// The connection would create or use a second cairnq installation
    /// beside an existing one (Postgres schemas).
    #[error("schema mismatch: {0}")]
    SchemaMismatch(String),
    /// The operation exists only on another backend.
    #[error("{operation} is not supported by the {backend} backend")]
    UnsupportedBackend {
        /// The operation that was asked for.
        operation: &'static str,
        /// The backend that cannot do it.
        backend: &'static str,
    },
    /// A value cannot be represented as JSON (NaN, infinity, a map with
    /// non-string keys, a type that refuses to serialize, or a stored value
    /// that does not decode into the requested Rust type).
    #[error("serialization error: {0}")]
    Serialization(String),
    /// An argument was refused before anything was written.
    #[error("invalid {field}: {message}")]
    Validation {
        /// The argument at fault.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The task does not exist (never did, or was purged).
    #[error("task {task_id} not found")]
    NotFound {
        /// The id or key that matched nothing.
        task_id: String,
    },
    /// A stored row could not be decoded: written by a foreign or broken
    /// writer. The report names the task and the column.
    #[error("{0}")]
    Undecodable(Undecodable),
    /// The store was closed and cannot serve requests.
    #[error("the store is closed")]
    StoreClosed,
    /// The database cannot be used as it is, and waiting will not change
    /// that: the file is read-only or not a database, a directory SQLite
    /// needs is not writable, a privilege is missing, a cairnq table is
    /// gone. Someone has to fix the environment; retrying the same call
    /// later fails the same way. Its [`kind`](Error::kind) is
    /// [`ErrorKind::StorageError`] (other SDKs have no separate kind for it).
    #[error("unusable database: {message}")]
    Unusable {
        /// The cause first (what is wrong with the environment, with the
        /// path or object at fault), then the failed step.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
    },
    /// The database could not be reached: the connection was refused or
    /// timed out, or it dropped under the call (a server stopped or
    /// restarting, a network down). Transient: the same call may succeed
    /// once the database answers again. A worker reports an outage once,
    /// reminds now and then, and says when it ends
    /// ([`observe::Outage`](crate::observe::Outage)), instead of reporting
    /// every failed call. Its [`kind`](Error::kind) is
    /// [`ErrorKind::StorageError`].
    #[error("database unreachable: {message}")]
    Unreachable {
        /// What failed (naming the host and port where the driver says
        /// them), then the driver's cause.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
    },
    /// The database or its driver failed.
    #[error("storage error: {message}")]
    Storage {
        /// What failed, with context.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
        /// Whether retrying the same operation later may succeed (lock
        /// contention, a dropped connection).
        transient: bool,
    },
}

/// The names of error kinds shared with other cairnq SDKs (CONFORMANCE.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::AlreadyExists`].
    AlreadyExists,
    /// See [`Error::QueueFull`].
    QueueFull,
    /// See [`Error::TaskTimeout`].
    TaskTimeout,
    /// See [`Error::TaskFailed`].
    TaskFailed,
    /// See [`Error::TaskCanceled`].
    TaskCanceled,
    /// See [`Error::LostLease`].
    LostLease,
    /// See [`Error::ProtocolVersionMismatch`].
    ProtocolVersionMismatch,
    /// See [`Error::SchemaMismatch`].
    SchemaMismatch,
    /// See [`Error::UnsupportedBackend`].
    UnsupportedBackend,
    /// See [`Error::Serialization`].
    SerializationError,
    /// See [`Error::Validation`].
    ValidationError,
    /// See [`Error::NotFound`].
    NotFound,
    /// See [`Error::StoreClosed`].
    StoreClosed,
    /// See [`Error::Storage`].
    StorageError,
}

impl ErrorKind {
    /// The kind's name as other SDKs and conformance scenarios spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AlreadyExists => "AlreadyExists",
            Self::QueueFull => "QueueFull",
            Self::TaskTimeout => "TaskTimeout",
            Self::TaskFailed => "TaskFailed",
            Self::TaskCanceled => "TaskCanceled",
            Self::LostLease => "LostLease",
            Self::ProtocolVersionMismatch => "ProtocolVersionMismatch",
            Self::SchemaMismatch => "SchemaMismatch",
            Self::UnsupportedBackend => "UnsupportedBackend",
            Self::SerializationError => "SerializationError",
            Self::ValidationError => "ValidationError",
            Self::NotFound => "NotFound",
            Self::StoreClosed => "StoreClosed",
            Self::StorageError => "StorageError",
        }
    }
}

impl Error {
    /// The kind of this error, for matching across SDKs.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Self::QueueFull { .. } => ErrorKind::QueueFull,
            Self::TaskTimeout { .. } => ErrorKind::TaskTimeout,
            Self::TaskFailed { .. } => ErrorKind::TaskFailed,
            Self::TaskCanceled { .. } => ErrorKind::TaskCanceled,
            Self::LostLease { .. } => ErrorKind::LostLease,
            Self::ProtocolVersionMismatch { .. } => ErrorKind::ProtocolVersionMismatch,
            Self::SchemaMismatch(_) => ErrorKind::SchemaMismatch,
            Self::UnsupportedBackend { .. } => ErrorKind::UnsupportedBackend,
            Self::Serialization(_) => ErrorKind::SerializationError,
            Self::Validation { .. } => ErrorKind::ValidationError,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::StoreClosed => ErrorKind::StoreClosed,
            Self::Storage { .. } | Self::Unreachable { .. } | Self::Unusable { .. } | Self::Undecodable(_) => {
                ErrorKind::StorageError
            }
        }
    }

    /// The task this error is about, when it is about one.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Self::AlreadyExists { task_id, .. }
            | Self::TaskFailed { task_id, .. }
            | Self::TaskCanceled { task_id }
            | Self::LostLease { task_id, .. }
            | Self::NotFound { task_id } => Some(task_id),
            Self::Undecodable(row) => row.task_id.as_deref(),
            Self::TaskTimeout { task_id, last_seen, .. } => {
                task_id.as_deref().or_else(|| last_seen.as_deref().map(|task| task.id.as_str()))
            }
            _ => None,
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Storage { transient: true, .. } | Self::Unreachable { .. })
    }

    /// Whether the database could not be reached at all
    /// ([`Error::Unreachable`]): an outage rather than a failed call.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// Whether the database itself cannot be used and waiting will not
    /// help: [`Error::Unusable`], a database of another protocol
    /// ([`Error::ProtocolVersionMismatch`]), a second installation
    /// ([`Error::SchemaMismatch`]) and a closed store
    /// ([`Error::StoreClosed`], which never reopens).
    ///
    /// Errors about one call (bad arguments, a lost lease, a missing task)
    /// are not: the next call may well succeed. Nor is a plain
    /// [`Error::Storage`], which may heal (a restarting server, a full disk
    /// that gets space).
    ///
    /// ```
    /// use cairnq_core::Error;
    /// let readonly = Error::Unusable { message: "queue.db is not writable".into(), source: None };
    /// assert!(readonly.is_unusable());
    /// assert!(!Error::Storage { message: "connection reset".into(), source: None, transient: true }.is_unusable());
    /// ```
    pub fn is_unusable(&self) -> bool {
        matches!(
            self,
            Self::Unusable { .. } | Self::ProtocolVersionMismatch { .. } | Self::SchemaMismatch(_) | Self::StoreClosed
        )
    }

    /// A copy of this error for a second receiver (errors are not `Clone`:
    /// a driver's `source` cannot be copied). Every field is kept but the
    /// source, whose text the backends already put in the message, so the
    /// copy has the same kind, [`is_transient`](Self::is_transient),
    /// [`is_unusable`](Self::is_unusable) and `Display` as the original.
    ///
    /// ```
    /// use cairnq_core::Error;
    /// let e = Error::Storage { message: "disk I/O error".into(), source: None, transient: true };
    /// assert_eq!(e.replicate().to_string(), e.to_string());
    /// ```
    pub fn replicate(&self) -> Error {
        match self {
            Self::AlreadyExists { key, task_id } => Self::AlreadyExists { key: key.clone(), task_id: task_id.clone() },
            Self::QueueFull { queue, max_depth, waited } => {
                Self::QueueFull { queue: queue.clone(), max_depth: *max_depth, waited: *waited }
            }
            Self::TaskTimeout { task_id, key, timeout, last_seen, diagnosis } => Self::TaskTimeout {
                task_id: task_id.clone(),
                key: key.clone(),
                timeout: *timeout,
                last_seen: last_seen.clone(),
                diagnosis: diagnosis.clone(),
            },
            Self::TaskFailed { task_id, error_type, code, message, retryable, details } => Self::TaskFailed {
                task_id: task_id.clone(),
                error_type: error_type.clone(),
                code: code.clone(),
                message: message.clone(),
                retryable: *retryable,
                details: details.clone(),
            },
            Self::TaskCanceled { task_id } => Self::TaskCanceled { task_id: task_id.clone() },
            Self::LostLease { task_id, worker_id } => {
                Self::LostLease { task_id: task_id.clone(), worker_id: worker_id.clone() }
            }
            Self::ProtocolVersionMismatch { found, expected } => {
                Self::ProtocolVersionMismatch { found: found.clone(), expected: *expected }
            }
            Self::SchemaMismatch(message) => Self::SchemaMismatch(message.clone()),
            Self::UnsupportedBackend { operation, backend } => Self::UnsupportedBackend { operation, backend },
            Self::Serialization(message) => Self::Serialization(message.clone()),
            Self::Validation { field, message } => Self::Validation { field, message: message.clone() },
            Self::NotFound { task_id } => Self::NotFound { task_id: task_id.clone() },
            Self::StoreClosed => Self::StoreClosed,
            Self::Undecodable(row) => Self::Undecodable(row.clone()),
            Self::Unusable { message, .. } => Self::Unusable { message: message.clone(), source: None },
            Self::Unreachable { message, .. } => Self::Unreachable { message: message.clone(), source: None },
            Self::Storage { message, transient, .. } => {
                Self::Storage { message: message.clone(), source: None, transient: *transient }
            }
        }
    }

    /// A [`Error::Validation`] for `field`.
    pub fn validation(field: &'static str, message: impl Into<String>) -> Self {
        Self::Validation { field, message: message.into() }
    }

    /// A non-transient [`Error::Storage`] wrapping a driver error; the
    /// message ends with the driver's own text, so `Display` names the
    /// cause and not only the step.
    pub fn storage(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        Self::Storage { message: format!("{}: {source}", message.into()), source: Some(source), transient: false }
    }

    /// A [`Error::Storage`] for a stored value that cannot be decoded
    /// (a corrupted or foreign row): reported, never a panic.
    pub fn corrupt_row(message: impl Into<String>) -> Self {
        Self::Storage { message: message.into(), source: None, transient: false }
    }
}

// Argument checks shared by the client and the seam's parameter types, so
// every refusal of the same kind reads the same.

pub(crate) fn require_non_empty(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() { Err(Error::validation(field, "must not be empty")) } else { Ok(()) }
}

pub(crate) fn require_non_negative(field: &'static str, value: i64) -> Result<()> {
    if value < 0 { Err(Error::validation(field, format!("{value} is negative"))) } else { Ok(()) }
}

/// Refuses text holding a NUL character. SQLite would store it, but
/// Postgres `text` columns cannot hold `\u0000`, so without this check the
/// same call would succeed on one backend and fail with driver text on the
/// other.
pub(crate) fn require_text(field: &'static str, value: &str) -> Result<()> {
    if value.contains('\0') {
        Err(Error::validation(field, "contains a NUL character (\\u0000), which Postgres text columns cannot hold"))
    } else {
        Ok(())
    }
}

pub(crate) fn require_positive(field: &'static str, value: i64) -> Result<()> {
    if value < 1 { Err(Error::validation(field, format!("{value} is below 1"))) } else { Ok(()) }
}

/// A duration in seconds as people write it: `30s`, `2.5s`, `0.25s`
/// (to the millisecond, trailing zeros dropped).
fn seconds(duration: Duration) -> String {
    let text = format!("{:.3}", duration.as_secs_f64());
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}s")
}

/// "task ID", "the task of key K" or both, for a timeout's message.
fn waited_for(task_id: Option<&str>, key: Option<&str>) -> String {
    match (task_id, key) {
        (Some(id), Some(key)) => format!("task {id} (key {key:?})"),
        (Some(id), None) => format!("task {id}"),
        (None, Some(key)) => format!("the task of key {key:?}"),
        (None, None) => "the task".to_string(),
    }
}

impl Undecodable {
    /// The error a read of this one row answers with.
    pub fn into_error(self) -> Error {
        Error::Undecodable(self)
    }
}

impl From<Undecodable> for Error {
    fn from(row: Undecodable) -> Self {
        row.into_error()
    }
}

impl From<JsonError> for Error {
    fn from(error: JsonError) -> Self {
        Error::Serialization(error.0)
    }
}

impl From<ParseCursorError> for Error {
    fn from(error: ParseCursorError) -> Self {
        Error::validation("after", error.to_string())
    }
}

impl From<UnknownStatus> for Error {
    fn from(status: UnknownStatus) -> Self {
        Error::validation("status", status.to_string())
    }
}

#[cfg(test)]
mod tests;
