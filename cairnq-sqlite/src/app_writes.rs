//! The application's closure that [`SqliteStore::complete_with`] runs on
//! the writer thread: what it may be ([`AppWrites`]), and how it is run, so
//! that a panic in it is the application's to see, not the writer's. The
//! panic is caught there (the thread serves every write of the database and
//! must survive it), is not reported by a worker's panic hook (the closure
//! is marked as application code, as handlers are), and answers the call
//! with an error naming the closure ([`ClosurePanicked`] as its source), by
//! which a worker fails the attempt as it fails a handler that panicked.
//!
//! [`SqliteStore::complete_with`]: crate::SqliteStore::complete_with

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cairnq_core::backend::{app_code, panic_message};
use cairnq_core::{Error, Result};
use rusqlite::Connection;

use crate::error::sqlite_error;

/// The application's writes [`SqliteStore::complete_with`](crate::SqliteStore::complete_with) runs on the
/// writer's connection, returning the task's result: any
/// `FnOnce(&rusqlite::Connection) -> rusqlite::Result<R> + Send + 'static`.
/// A name of its own so code above the backends (the worker's
/// `TaskContext::succeed_with`) can ask for one without naming the driver.
pub trait AppWrites<R>: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static {}

impl<R, F> AppWrites<R> for F where F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static {}

/// The application's closure given to
/// [`SqliteStore::complete_with`](crate::SqliteStore::complete_with)
/// panicked: its writes were rolled back and nothing was settled. The
/// `source` of the [`Error::Storage`] the call answers with.
///
/// ```
/// use cairnq_sqlite::ClosurePanicked;
/// let error = cairnq_core::Error::from(ClosurePanicked::new("no invoice number"));
/// let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<ClosurePanicked>());
/// assert_eq!(source.map(ClosurePanicked::message), Some("no invoice number"));
/// assert!(error.to_string().contains("the application's closure (complete_with) panicked: no invoice number"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosurePanicked {
    message: String,
}

impl ClosurePanicked {
    /// A panic with this message (its payload's text).
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }

    /// The panic's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The panic behind `error`, when `error` is what `complete_with`
    /// answered for a closure that panicked.
    pub fn of(error: &Error) -> Option<&Self> {
        std::error::Error::source(error).and_then(|source| source.downcast_ref::<Self>())
    }
}

impl fmt::Display for ClosurePanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the application's closure (complete_with) panicked: {}", self.message)
    }
}

impl std::error::Error for ClosurePanicked {}

impl From<ClosurePanicked> for Error {
    fn from(panic: ClosurePanicked) -> Self {
        let message = format!("{panic}; its writes were rolled back and nothing was settled");
        Error::Storage { message, source: Some(Box::new(panic)), transient: false }
    }
}

/// Runs the application's closure on `conn` as application code: its
/// error or its panic becomes the call's error.
pub(crate) fn run<R>(work: impl AppWrites<R>, conn: &Connection) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(|| app_code(|| work(conn)))) {
        Ok(written) => written.map_err(|e| sqlite_error("run the application's writes", "complete_with", e)),
        Err(panic) => Err(ClosurePanicked::new(panic_message(panic.as_ref())).into()),
    }
}
