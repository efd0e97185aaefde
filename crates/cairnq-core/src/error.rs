//! The one error type of cairnq's core layer.
//!
//! Every variant is a kind from PROTOCOL.md that callers can match on, so code
//! that handles `QueueFull` or `TaskFailed` works the same on every backend.
//! Backends translate their native errors into [`Error::Storage`] (or a more
//! specific kind) in one place each.

use serde_json::Value;

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
    #[error("queue {queue:?} is full (no headroom after {waited_ms} ms)")]
    QueueFull {
        /// The queue that is full.
        queue: String,
        /// How long the submit waited for headroom.
        waited_ms: u64,
    },
    /// `wait` / `call` ran out of time. The task is not touched and keeps
    /// running; wait on `task_id` again to pick it up.
    #[error("task {task_id} is not finished after {timeout_ms} ms (it keeps running)")]
    TaskTimeout {
        /// The task still in flight.
        task_id: String,
        /// The timeout that elapsed.
        timeout_ms: u64,
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
    Undecodable(crate::model::Undecodable),
    /// The store was closed and cannot serve requests.
    #[error("the store is closed")]
    StoreClosed,
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
            Self::Storage { .. } | Self::Undecodable(_) => ErrorKind::StorageError,
        }
    }

    /// The task this error is about, when it is about one.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Self::AlreadyExists { task_id, .. }
            | Self::TaskTimeout { task_id, .. }
            | Self::TaskFailed { task_id, .. }
            | Self::TaskCanceled { task_id }
            | Self::LostLease { task_id, .. }
            | Self::NotFound { task_id } => Some(task_id),
            Self::Undecodable(row) => row.task_id.as_deref(),
            _ => None,
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Storage { transient: true, .. })
    }

    /// A [`Error::Validation`] for `field`.
    pub fn validation(field: &'static str, message: impl Into<String>) -> Self {
        Self::Validation { field, message: message.into() }
    }

    /// A non-transient [`Error::Storage`] wrapping a driver error.
    pub fn storage(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Storage { message: message.into(), source: Some(source.into()), transient: false }
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

pub(crate) fn require_positive(field: &'static str, value: i64) -> Result<()> {
    if value < 1 { Err(Error::validation(field, format!("{value} is below 1"))) } else { Ok(()) }
}
