//! The one place rusqlite errors become cairnq errors.
//!
//! Three outcomes: lock contention is a *transient* [`Error::Storage`] (a
//! retry may succeed); a file SQLite cannot use as it is — read-only, not a
//! database, corrupt, unopenable, refused by the OS or an authorizer, or
//! missing a cairnq table — is [`Error::Unusable`] (waiting will not help);
//! anything else is a plain [`Error::Storage`]. An unusable error then gets
//! its cause named from the file system ([`crate::diagnose`]) on the
//! connection's own thread, never on the async runtime.

use std::path::Path;

use cairnq_core::{Error, StepError, could_not, find_cause};
use rusqlite::{Connection, ErrorCode};

use crate::diagnose::diagnose;

/// What the connection setup is called in messages: an open's failure
/// already says "cannot open PATH", so [`opening`] drops these words.
pub(crate) const OPEN: &str = "open the database";

/// A cairnq error for a failed SQLite call: the message says what was
/// being done in words (`doing`: "cancel the task") and SQLite's cause;
/// the `step` (a statement's name, a pragma) travels in the source chain
/// as a [`StepError`], for debugging, never in the message.
pub(crate) fn sqlite_error(doing: &str, step: &str, error: rusqlite::Error) -> Error {
    let message = could_not(doing, &error);
    let unusable = is_unusable(&error);
    let transient = is_busy(&error);
    let source = Some(Box::new(StepError::new(step, error)) as cairnq_core::BoxError);
    if unusable {
        return Error::Unusable { message, source };
    }
    Error::Storage { message, source, transient }
}

/// Whether SQLite refused because the file's content is broken (a file
/// that is no database at all is another matter: the open diagnoses it).
pub(crate) fn is_damage(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt)
}

/// Whether another connection holds the lock SQLite needed.
pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// Whether `error` says the file cannot be used as it is, whatever the
/// wait: SQLITE_READONLY (every extended code: a read-only file, directory,
/// `-shm`, or a database moved away), SQLITE_NOTADB, SQLITE_CORRUPT,
/// SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH, and a cairnq table that is
/// gone. SQLITE_FULL and SQLITE_IOERR are left healable: space gets freed,
/// and an I/O error may be one flaky read.
fn is_unusable(error: &rusqlite::Error) -> bool {
    let unusable_code = matches!(
        error.sqlite_error_code(),
        Some(
            ErrorCode::ReadOnly
                | ErrorCode::NotADatabase
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::AuthorizationForStatementDenied
        )
    );
    // SQLite reports a missing table as a plain SQLITE_ERROR; only its
    // text tells. A cairnq table gone from under a running store (dropped
    // by hand, or the file replaced) stays gone.
    unusable_code || error.to_string().contains("no such table: cairnq_")
}

/// Names the cause of an unusable error of the connection's file (a
/// read-only file, a directory SQLite cannot write to, a foreign header)
/// before SQLite's own text; other errors pass through. Runs file-system
/// calls: call it on the connection's thread.
pub(crate) fn explain(conn: &Connection, error: Error) -> Error {
    match (error, conn.path()) {
        (Error::Unusable { message, source }, Some(path)) if !path.is_empty() && damaged(source.as_deref()) => {
            Error::Unusable { message: damaged_file(path, &message), source }
        }
        (Error::Unusable { message, source }, Some(path)) if !path.is_empty() => match diagnose(Path::new(path)) {
            Some(cause) => Error::Unusable { message: caused(cause, &message, source.as_deref()), source },
            None => Error::Unusable { message: format!("{path}: {message}"), source },
        },
        (other, _) => other,
    }
}

/// The cause the file system shows, then SQLite's words in parentheses,
/// unless they only say it again: for a file with a foreign header
/// SQLite's "file is not a database" repeats the diagnosis.
fn caused(cause: String, message: &str, source: Option<&(dyn std::error::Error + Send + Sync + 'static)>) -> String {
    let code = source.and_then(|s| find_cause::<rusqlite::Error>(s)).and_then(rusqlite::Error::sqlite_error_code);
    if code == Some(ErrorCode::NotADatabase) { cause } else { format!("{cause} ({message})") }
}

/// Whether SQLite failed because the file's content is broken (a page of
/// garbage, a file cut short): no retry or permission fixes that.
fn damaged(source: Option<&(dyn std::error::Error + Send + Sync + 'static)>) -> bool {
    source.and_then(|s| find_cause::<rusqlite::Error>(s)).is_some_and(is_damage)
}

/// What a failure on a damaged file says: that the file is damaged, and
/// what can be done, before SQLite's own words.
fn damaged_file(path: &str, message: &str) -> String {
    format!(
        "the database file {path} is damaged ({message}): what still reads may be incomplete; stop the processes \
         using it, then restore it from a backup or salvage its readable rows with `sqlite3 {path} .recover` \
         (`PRAGMA quick_check` lists the damage)"
    )
}

/// Turns an error raised while opening `path` into one that starts with the
/// path and, when the file system shows what is wrong, the cause: a
/// directory, a missing or read-only directory, a read-only file, a foreign
/// header. Such an error becomes [`Error::Unusable`] whatever SQLite said
/// (SQLite often says only "unable to open database file"). Protocol and
/// other non-storage errors pass through.
pub(crate) fn opening(path: &Path, error: Error) -> Error {
    let (message, source, transient) = match error {
        Error::Storage { message, source, transient } => (without_open(message), source, transient),
        Error::Unusable { message, source } => {
            let message = without_open(message);
            let message = match diagnose(path) {
                Some(cause) => caused(cause, &message, source.as_deref()),
                None => message,
            };
            return Error::Unusable { message: format!("cannot open {}: {message}", path.display()), source };
        }
        other => return other,
    };
    match diagnose(path) {
        Some(cause) => {
            let message = caused(cause, &message, source.as_deref());
            Error::Unusable { message: format!("cannot open {}: {message}", path.display()), source }
        }
        None => Error::Storage { message: format!("cannot open {}: {message}", path.display()), source, transient },
    }
}

/// `message` without a leading "could not open the database: ", which
/// the "cannot open PATH" before it already says.
pub(crate) fn without_open(message: String) -> String {
    match message.strip_prefix(&could_not(OPEN, "")) {
        Some(cause) => cause.to_string(),
        None => message,
    }
}

/// Runs one caller's work, turning a panic into that caller's error so a
/// connection thread (and every later caller) survives it.
pub(crate) fn guarded<T>(work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(Error::corrupt_row("a store operation panicked; its changes were rolled back")))
}

#[cfg(test)]
mod tests {
    //! Classification and messages, on real SQLite errors.

    use super::*;

    fn failure(code: i32, text: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(text.to_string()))
    }

    #[test]
    fn environment_errors_are_unusable_and_contention_is_transient() {
        let unusable = [
            rusqlite::ffi::SQLITE_READONLY,
            rusqlite::ffi::SQLITE_READONLY_DIRECTORY,
            rusqlite::ffi::SQLITE_NOTADB,
            rusqlite::ffi::SQLITE_CORRUPT,
            rusqlite::ffi::SQLITE_CANTOPEN,
            rusqlite::ffi::SQLITE_PERM,
            rusqlite::ffi::SQLITE_AUTH,
        ];
        for code in unusable {
            let error = sqlite_error("claim tasks", "claim_due_tasks", failure(code, "x"));
            assert!(error.is_unusable() && !error.is_transient(), "code {code}: {error}");
        }
        let busy =
            sqlite_error("claim tasks", "claim_due_tasks", failure(rusqlite::ffi::SQLITE_BUSY, "database is locked"));
        assert!(busy.is_transient() && !busy.is_unusable(), "{busy}");
        let full = sqlite_error(
            "claim tasks",
            "claim_due_tasks",
            failure(rusqlite::ffi::SQLITE_FULL, "database or disk is full"),
        );
        assert!(!full.is_transient() && !full.is_unusable(), "{full}");
        let gone = sqlite_error(
            "claim tasks",
            "claim_due_tasks",
            failure(rusqlite::ffi::SQLITE_ERROR, "no such table: cairnq_tasks"),
        );
        assert!(gone.is_unusable(), "{gone}");
        let other =
            sqlite_error("claim tasks", "claim_due_tasks", failure(rusqlite::ffi::SQLITE_ERROR, "no such table: mine"));
        assert!(!other.is_unusable(), "{other}");
    }

    /// The replica every caller of a failed group commit gets (see the
    /// writer) used to be built from `Display`, which doubled the prefix.
    #[test]
    fn a_replicated_batch_error_says_storage_error_once() {
        let error = sqlite_error("commit the writes", "commit", failure(rusqlite::ffi::SQLITE_IOERR, "disk I/O error"));
        let copy = error.replicate();
        assert_eq!(copy.to_string(), "storage error: could not commit the writes: disk I/O error");
        let readonly =
            sqlite_error("take the write lock", "begin immediate", failure(rusqlite::ffi::SQLITE_READONLY, "readonly"));
        assert_eq!(readonly.replicate().to_string(), "unusable database: could not take the write lock: readonly");
    }

    /// The statement's name is for debugging: in the source chain and in
    /// `{:?}`, never in the message.
    #[test]
    fn the_step_name_stays_out_of_the_message() {
        let error =
            sqlite_error("cancel the task", "cancel_task", failure(rusqlite::ffi::SQLITE_BUSY, "database is locked"));
        assert_eq!(error.to_string(), "storage error: could not cancel the task: database is locked");
        let step = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<StepError>());
        assert_eq!(step.map(StepError::step), Some("cancel_task"));
        assert!(format!("{error:?}").contains("cancel_task"), "{error:?}");
        let source = std::error::Error::source(&error).expect("a source");
        assert!(find_cause::<rusqlite::Error>(source).is_some_and(is_busy), "the driver's error is still found");
    }

    #[test]
    fn an_open_error_starts_with_the_path_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("queue.db");
        let error = opening(&path, sqlite_error(OPEN, "open", failure(rusqlite::ffi::SQLITE_IOERR, "disk I/O error")));
        let shown = error.to_string();
        assert_eq!(shown, format!("storage error: cannot open {}: disk I/O error", path.display()));
        assert_eq!(opening(&path, Error::StoreClosed).to_string(), "the store is closed");
    }
}
