//! The one place Postgres errors become cairnq errors.
//!
//! Every driver, pool and server error passes through [`classify`] (or
//! [`classify_pool`]), so callers see the protocol's kinds: a refused JSON
//! value is [`Error::Serialization`], and anything a retry may cure — a
//! dropped connection, a restarting server, a deadlock or serialization
//! failure — is a *transient* [`Error::Storage`].

use cairnq_core::Error;
use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

/// Maps a tokio-postgres error, with `context` saying what was being done.
pub(crate) fn classify(context: &str, err: tokio_postgres::Error) -> Error {
    let Some(db) = err.as_db_error() else {
        // No server answer at all: the connection failed or dropped.
        let message = format!("{context}: {err}{}", source_text(&err));
        return Error::Storage { message, source: Some(Box::new(err)), transient: true };
    };
    let code = db.code().clone();
    let message = format!("{context}: {} {}: {}", db.severity(), code.code(), db.message());
    if is_refused_value(&code) {
        return Error::Serialization(message);
    }
    Error::Storage { message, source: Some(Box::new(err)), transient: is_transient(&code) }
}

/// Maps a connection-pool error (timeouts, a closed pool, connect errors).
pub(crate) fn classify_pool(context: &str, err: PoolError) -> Error {
    match err {
        PoolError::Backend(e) => classify(context, e),
        PoolError::PostCreateHook(deadpool_postgres::HookError::Backend(e)) => classify(context, e),
        PoolError::Closed => Error::StoreClosed,
        PoolError::Timeout(kind) => Error::Storage {
            message: format!("{context}: timed out ({kind:?}) waiting for a Postgres connection"),
            source: None,
            transient: true,
        },
        other => Error::Storage { message: format!("{context}: {other}"), source: None, transient: false },
    }
}

/// Values Postgres cannot store: `\u0000` in jsonb or text, bad encoding.
fn is_refused_value(code: &SqlState) -> bool {
    [SqlState::UNTRANSLATABLE_CHARACTER, SqlState::CHARACTER_NOT_IN_REPERTOIRE, SqlState::INVALID_TEXT_REPRESENTATION]
        .contains(code)
}

fn is_transient(code: &SqlState) -> bool {
    let class = &code.code()[..2];
    // 08: connection exception; 40: transaction rollback (serialization
    // failure, deadlock); 53: insufficient resources (too many
    // connections); 57: operator intervention (admin shutdown, cannot
    // connect now); 55P03: lock not available.
    matches!(class, "08" | "40" | "53" | "57") || *code == SqlState::LOCK_NOT_AVAILABLE
}

/// The driver's own error text often stops at "error connecting to server";
/// the cause (refused, timed out, bad password) is in the source chain.
fn source_text(err: &tokio_postgres::Error) -> String {
    std::error::Error::source(err).map(|s| format!(": {s}")).unwrap_or_default()
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
    fn refused_values_are_serialization_errors() {
        assert!(is_refused_value(&SqlState::UNTRANSLATABLE_CHARACTER));
        assert!(!is_refused_value(&SqlState::UNDEFINED_TABLE));
    }

    #[test]
    fn a_closed_pool_means_a_closed_store() {
        assert!(matches!(classify_pool("x", PoolError::Closed), Error::StoreClosed));
    }
}
