//! Error kinds, messages and classification, checked one by one.

//! Display texts and the unusable / replicate helpers.

use super::*;

/// One error of every variant, the ones carrying a driver error too.
fn one_of_each() -> Vec<Error> {
    let io = || std::io::Error::other("disk on fire");
    vec![
        Error::AlreadyExists { key: "k".into(), task_id: "t".into() },
        Error::QueueFull { queue: "q".into(), max_depth: 10, waited: Duration::from_millis(1) },
        Error::TaskTimeout {
            task_id: Some("t".into()),
            key: None,
            timeout: Duration::from_secs(1),
            last_seen: None,
            diagnosis: "never claimed".into(),
        },
        Error::TaskFailed {
            task_id: "t".into(),
            error_type: "E".into(),
            code: "c".into(),
            message: "m".into(),
            retryable: true,
            details: Value::Null,
        },
        Error::TaskCanceled { task_id: "t".into() },
        Error::LostLease { task_id: "t".into(), worker_id: "w".into() },
        Error::ProtocolVersionMismatch { found: "2".into(), expected: 1 },
        Error::SchemaMismatch("two installations".into()),
        Error::UnsupportedBackend { operation: "op", backend: "b" },
        Error::Serialization("NaN".into()),
        Error::validation("name", "must not be empty"),
        Error::NotFound { task_id: "t".into() },
        Error::StoreClosed,
        Error::Unusable { message: "queue.db is not writable".into(), source: Some(Box::new(io())) },
        Error::storage("begin", io()),
        Error::Unreachable { message: "connect to Postgres at db:5432: refused".into(), source: Some(Box::new(io())) },
        Error::corrupt_row("column x"),
    ]
}

#[test]
fn no_display_repeats_its_prefix() {
    let prefixes =
        ["storage error: ", "unusable database: ", "database unreachable: ", "serialization error: ", "invalid "];
    for error in one_of_each() {
        for shown in [error.to_string(), error.replicate().to_string()] {
            for prefix in prefixes {
                assert!(shown.matches(prefix).count() <= 1, "{prefix:?} twice in {shown:?}");
            }
        }
    }
}

#[test]
fn a_replica_keeps_kind_transience_unusability_and_text() {
    for error in one_of_each() {
        let copy = error.replicate();
        assert_eq!(copy.kind(), error.kind());
        assert_eq!(copy.is_transient(), error.is_transient());
        assert_eq!(copy.is_unusable(), error.is_unusable());
        assert_eq!(copy.to_string(), error.to_string());
    }
}

#[test]
fn a_storage_error_names_its_cause() {
    let error = Error::storage("cannot start the tokio runtime", std::io::Error::other("too many threads"));
    assert_eq!(error.to_string(), "storage error: cannot start the tokio runtime: too many threads");
}

#[test]
fn only_environment_errors_are_unusable() {
    let unusable: Vec<_> = one_of_each().into_iter().filter(Error::is_unusable).map(|e| e.kind()).collect();
    assert_eq!(
        unusable,
        [
            ErrorKind::ProtocolVersionMismatch,
            ErrorKind::SchemaMismatch,
            ErrorKind::StoreClosed,
            ErrorKind::StorageError
        ]
    );
}

#[test]
fn nul_is_refused_in_text() {
    assert!(require_text("queue", "default").is_ok());
    let err = require_text("queue", "a\0b").expect_err("NUL refused");
    assert_eq!(err.kind(), ErrorKind::ValidationError);
    assert!(err.to_string().starts_with("invalid queue: contains a NUL"), "{err}");
}

#[test]
fn waits_read_in_seconds() {
    assert_eq!(seconds(Duration::from_secs(30)), "30s");
    assert_eq!(seconds(Duration::from_millis(2_500)), "2.5s");
    assert_eq!(seconds(Duration::from_millis(250)), "0.25s");
    assert_eq!(seconds(Duration::ZERO), "0s");
    let full = Error::QueueFull { queue: "q".into(), max_depth: 3, waited: Duration::from_millis(2_500) };
    assert_eq!(full.to_string(), "queue \"q\" is full: it held 3 queued tasks, its limit, for 2.5s");
}
