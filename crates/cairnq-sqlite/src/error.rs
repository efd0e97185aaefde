//! The one place rusqlite errors become cairnq errors.

use cairnq_core::Error;
use rusqlite::ErrorCode;

/// A [`Error::Storage`] for a failed SQLite call; lock contention is marked
/// transient so callers know a later retry may succeed.
pub(crate) fn sqlite_error(context: &str, error: rusqlite::Error) -> Error {
    let transient = is_busy(&error);
    Error::Storage { message: format!("{context}: {error}"), source: Some(Box::new(error)), transient }
}

/// Whether another connection holds the lock SQLite needed.
pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// A copy of `error` for every caller of a failed group commit (errors are
/// not `Clone`; the copy keeps message and transience).
pub(crate) fn replicate(error: &Error) -> Error {
    Error::Storage { message: error.to_string(), source: None, transient: error.is_transient() }
}

/// Prefixes a storage error raised while opening with the database path.
pub(crate) fn at_path(path: &std::path::Path, error: Error) -> Error {
    match error {
        Error::Storage { message, source, transient } => {
            Error::Storage { message: format!("opening {}: {message}", path.display()), source, transient }
        }
        other => other,
    }
}

/// Runs one caller's work, turning a panic into that caller's error so a
/// connection thread (and every later caller) survives it.
pub(crate) fn guarded<T>(work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(Error::corrupt_row("a store operation panicked; its changes were rolled back")))
}
