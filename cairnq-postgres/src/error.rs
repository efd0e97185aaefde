//! The one place Postgres errors become cairnq errors.
//!
//! Every driver, pool and server error passes through [`classify`] (or
//! [`classify_pool`]), so callers see the protocol's kinds: a refused JSON
//! value is [`Error::Serialization`], a server that cannot be reached — a
//! refused, timed-out or dropped connection, a server shutting down or
//! starting up — is [`Error::Unreachable`] (transient, and an outage a
//! worker reports once), anything else a retry may cure — a deadlock or
//! serialization failure, too many connections — is a *transient*
//! [`Error::Storage`], and what no wait cures —
//! a missing privilege, a read-only transaction (a standby, or
//! `default_transaction_read_only`), failed authentication, a database,
//! schema or cairnq table that does not exist, corrupted data — is
//! [`Error::Unusable`].

use cairnq_core::{BoxError, Error, StepError, could_not};
use deadpool_postgres::{PoolError, TimeoutType};
use tokio_postgres::error::SqlState;

/// Maps a tokio-postgres error met while doing `doing` (in words: "cancel
/// the task"), by running `step` (a statement's name or SQL text). The
/// message says `doing` and the cause; `step` travels in the source chain
/// as a [`StepError`], for debugging, never in the message.
pub(crate) fn classify(doing: &str, step: &str, err: tokio_postgres::Error) -> Error {
    let Some(db) = err.as_db_error() else {
        // No server answer at all: the connection failed or dropped.
        let message = could_not(doing, driver_text(&err));
        return Error::Unreachable { message, source: step_source(step, err) };
    };
    let code = db.code().clone();
    let message = could_not(doing, format!("{} (SQLSTATE {})", db.message(), code.code()));
    if is_going_away(&code) {
        return Error::Unreachable { message, source: step_source(step, err) };
    }
    if is_refused_value(&code) {
        return Error::Serialization(message);
    }
    if is_unusable(&code, db.message()) {
        // The server's words are the cause (`permission denied for table
        // cairnq_tasks`): they go first, the operation after.
        let message = format!("{} (SQLSTATE {}) while trying to {doing}", db.message(), code.code());
        return Error::Unusable { message, source: step_source(step, err) };
    }
    let transient = is_transient(&code);
    Error::Storage { message, source: step_source(step, err), transient }
}

/// Maps a connection-pool error (timeouts, a closed pool, connect errors)
/// met while doing `doing`.
pub(crate) fn classify_pool(doing: &str, err: PoolError) -> Error {
    const STEP: &str = "pool checkout";
    match err {
        PoolError::Backend(e) => classify(doing, STEP, e),
        PoolError::PostCreateHook(deadpool_postgres::HookError::Backend(e)) => classify(doing, STEP, e),
        PoolError::Closed => Error::StoreClosed,
        // Opening (or checking) a connection timed out: nobody answers.
        PoolError::Timeout(TimeoutType::Create | TimeoutType::Recycle) => {
            Error::Unreachable { message: could_not(doing, "no answer within the connect timeout"), source: None }
        }
        PoolError::Timeout(_) => Error::Storage {
            message: could_not(doing, "every pooled connection stayed busy for the whole wait timeout"),
            source: None,
            transient: true,
        },
        other => Error::Storage { message: could_not(doing, &other), source: None, transient: false },
    }
}

fn step_source(step: &str, err: tokio_postgres::Error) -> Option<BoxError> {
    Some(Box::new(StepError::new(step, err)))
}

/// Values Postgres cannot store: `\u0000` in jsonb or text, bad encoding.
fn is_refused_value(code: &SqlState) -> bool {
    [SqlState::UNTRANSLATABLE_CHARACTER, SqlState::CHARACTER_NOT_IN_REPERTOIRE, SqlState::INVALID_TEXT_REPRESENTATION]
        .contains(code)
}

/// Server answers no wait cures: someone must grant a privilege, point the
/// DSN at a primary, fix a password, or install cairnq where it is looked
/// for. Checked before [`is_transient`]: `database_dropped` (57P04) sits in
/// the otherwise transient class 57.
fn is_unusable(code: &SqlState, message: &str) -> bool {
    let class = &code.code()[..2];
    // 28: invalid authorization (bad password, no pg_hba entry).
    class == "28"
        || [
            SqlState::INSUFFICIENT_PRIVILEGE,
            SqlState::READ_ONLY_SQL_TRANSACTION,
            SqlState::INVALID_CATALOG_NAME,
            SqlState::INVALID_SCHEMA_NAME,
            SqlState::DATABASE_DROPPED,
            SqlState::DATA_CORRUPTED,
            SqlState::INDEX_CORRUPTED,
        ]
        .contains(code)
        // Only cairnq's own tables: `relation "cairnq_tasks" does not exist`.
        || (*code == SqlState::UNDEFINED_TABLE && message.contains("\"cairnq_"))
}

/// The server is shutting down, starting up, or dropped the connection
/// (class 08, and 57P01-57P03: admin or crash shutdown, cannot connect
/// now): an outage, not a failed call.
fn is_going_away(code: &SqlState) -> bool {
    code.code().starts_with("08")
        || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code)
}

fn is_transient(code: &SqlState) -> bool {
    let class = &code.code()[..2];
    // 08: connection exception; 40: transaction rollback (serialization
    // failure, deadlock); 53: insufficient resources (too many
    // connections); 57: operator intervention (admin shutdown, cannot
    // connect now); 55P03: lock not available.
    matches!(class, "08" | "40" | "53" | "57") || *code == SqlState::LOCK_NOT_AVAILABLE
}

/// The driver's words for a failure without a server answer, with the
/// cause from its source chain (refused, timed out, bad password), which
/// its own text leaves out. "error connecting to server" is dropped when
/// there is a cause: every connect message already says "could not
/// connect".
fn driver_text(err: &tokio_postgres::Error) -> String {
    const CONNECTING: &str = "error connecting to server";
    match std::error::Error::source(err) {
        Some(cause) if err.to_string() == CONNECTING => cause.to_string(),
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_classes_are_the_retryable_ones() {
        assert!(is_transient(&SqlState::T_R_DEADLOCK_DETECTED));
        assert!(is_transient(&SqlState::T_R_SERIALIZATION_FAILURE));
        assert!(is_transient(&SqlState::ADMIN_SHUTDOWN));
        assert!(is_transient(&SqlState::TOO_MANY_CONNECTIONS));
        assert!(is_transient(&SqlState::CONNECTION_FAILURE));
        assert!(!is_transient(&SqlState::INSUFFICIENT_PRIVILEGE));
        assert!(!is_transient(&SqlState::INVALID_PASSWORD));
        assert!(!is_transient(&SqlState::UNIQUE_VIOLATION));
    }

    #[test]
    fn environment_answers_are_unusable_and_never_transient() {
        let tasks_gone = r#"relation "cairnq_tasks" does not exist"#;
        for code in [
            SqlState::INSUFFICIENT_PRIVILEGE,
            SqlState::READ_ONLY_SQL_TRANSACTION,
            SqlState::INVALID_CATALOG_NAME,
            SqlState::INVALID_PASSWORD,
            SqlState::DATABASE_DROPPED,
            SqlState::DATA_CORRUPTED,
        ] {
            assert!(is_unusable(&code, "x"), "{code:?}");
        }
        assert!(is_unusable(&SqlState::UNDEFINED_TABLE, tasks_gone));
        assert!(!is_unusable(&SqlState::UNDEFINED_TABLE, r#"relation "mine" does not exist"#));
        assert!(!is_unusable(&SqlState::T_R_DEADLOCK_DETECTED, "x"));
        assert!(!is_unusable(&SqlState::ADMIN_SHUTDOWN, "x"));
        assert!(!is_unusable(&SqlState::UNIQUE_VIOLATION, "x"));
    }

    #[test]
    fn refused_values_are_serialization_errors() {
        assert!(is_refused_value(&SqlState::UNTRANSLATABLE_CHARACTER));
        assert!(!is_refused_value(&SqlState::UNDEFINED_TABLE));
    }

    #[test]
    fn a_closed_pool_means_a_closed_store() {
        assert!(matches!(classify_pool("x", PoolError::Closed), Error::StoreClosed));
    }
}
