//! The line protocol of `cairnq worker --serve`: what the worker writes to
//! the command's stdin (a task, a cancel) and what it reads back from its
//! stdout (a result, an error, progress), one JSON object per line. Kept
//! apart from the processes so the grammar is tested on its own.

use std::collections::BTreeMap;

use cairnq_core::{ErrorEnvelope, Json};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::context::TaskContext;
use crate::task_error::TaskError;

/// The envelope type of failures the serve runner reports itself (a line it
/// cannot read, the command's exit); a command's own error keeps the type
/// it names.
pub(super) const ERROR_TYPE: &str = "ServeError";

/// One task as a line: `id` first (so a shell loop can cut it out without a
/// JSON parser), then `name`, `queue`, `attempt`, `max_attempts` and the
/// payload exactly as stored (made compact when it spans lines).
pub(super) fn task_line(ctx: &TaskContext) -> String {
    let payload = ctx.payload_json().as_str();
    // JSON text holds a line break only as whitespace, so re-encoding it
    // compactly changes nothing but the spacing.
    let compact;
    let payload = if payload.contains(['\n', '\r']) {
        compact = serde_json::from_str::<Value>(payload).map(|v| v.to_string()).unwrap_or_else(|_| "null".into());
        compact.as_str()
    } else {
        payload
    };
    format!(
        "{{\"id\":{},\"name\":{},\"queue\":{},\"attempt\":{},\"max_attempts\":{},\"payload\":{payload}}}\n",
        json!(ctx.task_id()),
        json!(ctx.name()),
        json!(ctx.queue()),
        ctx.attempt(),
        ctx.max_attempts(),
    )
}

/// The line telling the command to stop working on task `id`.
pub(super) fn cancel_line(id: &str) -> String {
    format!("{{\"id\":{},\"cancel\":true}}\n", json!(id))
}

/// One line the command wrote, read.
#[derive(Debug)]
pub(super) enum Message {
    /// `{"id", "result": ANY}`: the task succeeded with it.
    Result { id: String, result: Json },
    /// `{"id", "error": {...}}`: the task failed.
    Error { id: String, error: TaskError },
    /// `{"id", "progress": 0..1, "message"?}`.
    Progress { id: String, value: f64, message: Option<String> },
}

impl Message {
    pub(super) fn id(&self) -> &str {
        match self {
            Self::Result { id, .. } | Self::Error { id, .. } | Self::Progress { id, .. } => id,
        }
    }
}

/// Reads one line of the command's stdout; `Err` says, in words, why it is
/// not a message of the protocol.
pub(super) fn parse(line: &str) -> Result<Message, String> {
    let fields: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object ({e})"))?;
    let id = match fields.get("id").map(|raw| serde_json::from_str::<Value>(raw.get())) {
        Some(Ok(Value::String(id))) => id,
        Some(_) => return Err("its \"id\" is not a string".into()),
        None => return Err("it has no \"id\"".into()),
    };
    if let Some(result) = fields.get("result") {
        let result = Json::parse(result.get().to_string()).map_err(|e| format!("its \"result\" is {e}"))?;
        return Ok(Message::Result { id, result });
    }
    if let Some(error) = fields.get("error") {
        let error: Value = serde_json::from_str(error.get()).map_err(|e| format!("its \"error\" is not JSON ({e})"))?;
        return Ok(Message::Error { id, error: reported_error(error)? });
    }
    if let Some(progress) = fields.get("progress") {
        let value = serde_json::from_str::<f64>(progress.get())
            .ok()
            .filter(|v| (0.0..=1.0).contains(v))
            .ok_or("its \"progress\" is not a number from 0 to 1")?;
        let message = match fields.get("message").map(|raw| serde_json::from_str::<Value>(raw.get())) {
            None | Some(Ok(Value::Null)) => None,
            Some(Ok(Value::String(message))) => Some(message),
            Some(_) => return Err("its \"message\" is not a string".into()),
        };
        return Ok(Message::Progress { id, value, message });
    }
    Err("it holds none of \"result\", \"error\" or \"progress\"".into())
}

/// A command's `error`: a string (the message), or an object whose
/// `message`, `type`, `code`, `retryable` (default true) and `details` fill
/// the envelope.
fn reported_error(error: Value) -> Result<TaskError, String> {
    let mut fields = match error {
        Value::String(message) => Map::from_iter([("message".to_string(), Value::String(message))]),
        Value::Object(fields) => fields,
        _ => return Err("its \"error\" is neither an object nor a string".into()),
    };
    let mut text = |key: &str, default: &str| match fields.remove(key) {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("its \"error\".\"{key}\" is not a string")),
    };
    let message = text("message", "the command reported an error")?;
    let error_type = text("type", ERROR_TYPE)?;
    let code = text("code", cairnq_core::codes::HANDLER_ERROR)?;
    let retryable = match fields.remove("retryable") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("its \"error\".\"retryable\" is not true or false".into()),
    };
    let details = fields.remove("details").unwrap_or_else(|| Value::Object(Map::new()));
    let envelope = if retryable { ErrorEnvelope::retryable(code, message) } else { ErrorEnvelope::new(code, message) };
    Ok(TaskError::from_envelope(envelope.error_type(error_type)).details(details))
}

#[cfg(test)]
mod tests {
    //! The grammar of the command's lines; the exchange itself runs on real
    //! processes in tests/serve.rs.

    use super::*;

    #[test]
    fn results_errors_and_progress_are_read() {
        match parse(r#"{"id":"t1","result":{"n": 1.50}}"#) {
            Ok(Message::Result { id, result }) => assert_eq!((id.as_str(), result.as_str()), ("t1", r#"{"n": 1.50}"#)),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(parse(r#"{"id":"t1","result":null}"#), Ok(Message::Result { result, .. }) if result.is_null())
        );
        match parse(r#"{"id":"t2","error":{"message":"no row 7","type":"KeyError","retryable":false}}"#) {
            Ok(Message::Error { error, .. }) => {
                let e = error.envelope();
                assert_eq!((e.message.as_str(), e.error_type.as_str(), e.retryable), ("no row 7", "KeyError", false));
                assert_eq!(e.code, "handler_error");
            }
            other => panic!("{other:?}"),
        }
        match parse(r#"{"id":"t2","error":"boom"}"#) {
            Ok(Message::Error { error, .. }) => {
                assert!(error.is_retryable());
                assert_eq!(error.envelope().error_type, ERROR_TYPE);
            }
            other => panic!("{other:?}"),
        }
        match parse(r#"{"id":"t3","progress":0.5,"message":"half"}"#) {
            Ok(Message::Progress { value, message, .. }) => {
                assert_eq!((value, message.as_deref()), (0.5, Some("half")))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_lines_say_why() {
        for (line, says) in [
            ("hello", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (r#"{"result":1}"#, "no \"id\""),
            (r#"{"id":7,"result":1}"#, "not a string"),
            (r#"{"id":"t"}"#, "none of"),
            (r#"{"id":"t","progress":2}"#, "from 0 to 1"),
            (r#"{"id":"t","error":3}"#, "neither an object nor a string"),
            (r#"{"id":"t","error":{"retryable":"yes"}}"#, "retryable"),
        ] {
            let why = parse(line).expect_err(line);
            assert!(why.contains(says), "{line}: {why}");
        }
    }

    #[test]
    fn cancel_lines_name_the_task() {
        assert_eq!(cancel_line("a\"b"), "{\"id\":\"a\\\"b\",\"cancel\":true}\n");
    }
}
