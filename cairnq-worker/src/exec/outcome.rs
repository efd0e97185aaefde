//! From how the command ended to how its task settles: the exit status
//! table of `cairnq worker --exec`, and error envelopes that say what
//! happened, with the tail of stderr in `details.stderr`.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use cairnq_core::{ErrorEnvelope, Json, codes, human_duration};
use serde_json::{Map, Value, json};

use super::streams::Stdout;
use crate::context::TaskContext;
use crate::task_error::TaskError;

/// The exit code that fails a task for good (`EX_DATAERR`, sysexits.h).
pub const EXIT_PERMANENT: i32 = 65;
/// The exit code that asks for another attempt (`EX_TEMPFAIL`); any other
/// non-zero code is retried too.
pub const EXIT_RETRY: i32 = 75;

/// The envelope type of every failure the exec runner reports.
const ERROR_TYPE: &str = "ExecError";

/// Why the worker stopped the command before it ended on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopReason {
    Canceled,
    LostLease,
    StdoutTooLarge,
    /// Near the worker's `max_run` (this one).
    MaxRun(Duration),
}

/// Everything the attempt left behind.
#[derive(Debug)]
pub(super) struct Ran {
    pub(super) status: io::Result<ExitStatus>,
    pub(super) stopped: Option<StopReason>,
    /// `None`: the pipes stayed open past the grace period after the exit.
    pub(super) streams: Option<(io::Result<Stdout>, String)>,
    pub(super) max_stdout_bytes: u64,
}

/// The task's result, or the failure to record.
pub(super) fn settle(ran: Ran) -> Result<Json, TaskError> {
    let Some((stdout, stderr)) = ran.streams else {
        let message = "the command exited, but its stdout or stderr stayed open (a process it started outside \
                       its process group still holds them)";
        return Err(failure("exec_pipes_open", message, true, Map::new(), ""));
    };
    if let Some(reason) = ran.stopped {
        return Err(stopped(reason, &stderr, ran.max_stdout_bytes));
    }
    let status = ran.status.map_err(|e| {
        failure("exec_wait_failed", &format!("cannot wait for the command: {e}"), true, Map::new(), &stderr)
    })?;
    if let Some(code) = status.code() {
        let extra = Map::from_iter([("exit_code".to_string(), json!(code))]);
        let (retryable, meaning) = match code {
            0 => return parse_result(stdout, &stderr),
            EXIT_PERMANENT => (false, " (EX_DATAERR: failed for good)"),
            EXIT_RETRY => (true, " (EX_TEMPFAIL: retried)"),
            // What sh answers when it cannot run the command it was given.
            126 => (true, " (the command is not executable)"),
            127 => (true, " (command not found)"),
            _ => (true, ""),
        };
        let message = format!("the command exited with code {code}{meaning}");
        return Err(failure("exit_status", &message, retryable, extra, &stderr));
    }
    let signal = status.signal().unwrap_or_default();
    let extra = Map::from_iter([("signal".to_string(), json!(signal))]);
    let message = format!("the command was killed by signal {signal}");
    Err(failure("exit_signal", &message, true, extra, &stderr))
}

/// The command was stopped by the worker (or, canceled before it started,
/// never ran).
pub(super) fn stopped(reason: StopReason, stderr: &str, max_stdout_bytes: u64) -> TaskError {
    match reason {
        StopReason::Canceled => {
            failure("canceled", "the task was canceled: the command was stopped", true, Map::new(), stderr)
        }
        StopReason::LostLease => {
            let message = "the worker lost the task's lease: the command was stopped";
            failure("lost_lease", message, true, Map::new(), stderr)
        }
        StopReason::StdoutTooLarge => {
            let message = format!(
                "the command wrote more than {max_stdout_bytes} bytes to stdout (the result's limit) and was stopped"
            );
            failure("result_too_large", &message, false, Map::new(), stderr)
        }
        StopReason::MaxRun(limit) => {
            let message = format!("the command was stopped as the attempt neared max_run, {}", human_duration(limit));
            failure(codes::HANDLER_TIMEOUT, &message, true, Map::new(), stderr)
        }
    }
}

/// Tells the worker's log about a failed attempt, so a command that keeps
/// failing shows where its operator looks, not only in error envelopes: a
/// `tracing` event (target `cairnq_worker::exec`) naming the attempt
/// (`task_id`, `name`, `queue`, `attempt`, `worker_id`), how the command
/// ended (`exit_code` or `signal`) and the envelope's code (`error.kind`);
/// its message, `attempt 2 of 3: ` then the envelope's (which ends with the
/// command's last stderr line), says what becomes of the task. A warning, but for a cancel
/// and a lost lease (asked for, or already reported by the worker): info.
pub(super) fn report(ctx: &TaskContext, error: &TaskError) {
    let envelope = error.envelope();
    let (warn, then) = match envelope.code.as_str() {
        "canceled" | "lost_lease" => (false, ""),
        _ if envelope.retryable && ctx.attempt() < ctx.max_attempts() => (true, "; retried"),
        _ if envelope.retryable => (true, "; no attempts left, failed"),
        _ => (true, "; failed for good"),
    };
    let exit_code = envelope.details.get("exit_code").and_then(Value::as_i64);
    let signal = envelope.details.get("signal").and_then(Value::as_i64);
    macro_rules! event {
        ($level:ident) => {
            tracing::$level!(
                target: "cairnq_worker::exec",
                task_id = %ctx.task_id(),
                name = %ctx.name(),
                queue = %ctx.queue(),
                attempt = ctx.attempt(),
                worker_id = %ctx.worker_id(),
                exit_code,
                signal,
                error.kind = %envelope.code,
                "attempt {} of {}: {}{then}",
                ctx.attempt(),
                ctx.max_attempts(),
                envelope.message,
            )
        };
    }
    if warn {
        event!(warn);
    } else {
        event!(info);
    }
}

/// The command could not be started (no `sh`, no such directory, no
/// processes left, no room for the payload file): retried, another attempt
/// may find it better.
pub(super) fn not_started(error: io::Error) -> TaskError {
    failure("exec_spawn_failed", &format!("cannot start the command with sh -c: {error}"), true, Map::new(), "")
}

/// Exit 0: stdout is the result; empty (or only whitespace) means `null`.
fn parse_result(stdout: io::Result<Stdout>, stderr: &str) -> Result<Json, TaskError> {
    let stdout = stdout.map_err(|e| {
        failure("exec_read_failed", &format!("cannot read the command's stdout: {e}"), true, Map::new(), stderr)
    })?;
    let text = String::from_utf8(stdout.bytes).map_err(|e| {
        let message = format!(
            "the command succeeded but its stdout is not UTF-8 text (at byte {})",
            e.utf8_error().valid_up_to()
        );
        failure("invalid_result", &message, false, Map::new(), stderr)
    })?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Json::null());
    }
    Json::parse(trimmed.to_string()).map_err(|e| {
        // `e` reads "not valid JSON: <why>": said once.
        let message = format!("the command succeeded but its stdout is {e}");
        let extra = Map::from_iter([("stdout".to_string(), json!(head(trimmed, 200)))]);
        failure("invalid_result", &message, false, extra, stderr)
    })
}

/// An `ExecError` envelope: `message`, then the last stderr line for a
/// quick read; the whole tail in `details.stderr`.
fn failure(code: &str, message: &str, retryable: bool, mut details: Map<String, Value>, stderr: &str) -> TaskError {
    let last_line = stderr.lines().rev().map(str::trim).find(|l| !l.is_empty());
    let message = match last_line {
        Some(line) => format!("{message}: {}", head(line, 200)),
        None => message.to_string(),
    };
    details.insert("stderr".to_string(), Value::String(stderr.to_string()));
    let envelope = if retryable { ErrorEnvelope::retryable(code, message) } else { ErrorEnvelope::new(code, message) };
    let envelope = envelope.error_type(ERROR_TYPE);
    TaskError::from_envelope(envelope).details(Value::Object(details))
}

/// The first `max` characters of `text`, marked when cut.
pub(super) fn head(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! The exit status table and the result grammar, on real exit statuses.

    use super::*;

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn ran(status: ExitStatus, stdout: &str, stderr: &str) -> Ran {
        let stdout = Stdout { bytes: stdout.as_bytes().to_vec(), overflowed: false };
        Ran {
            status: Ok(status),
            stopped: None,
            streams: Some((Ok(stdout), stderr.to_string())),
            max_stdout_bytes: 100,
        }
    }

    #[test]
    fn exit_codes_decide_success_and_retries() {
        let ok = settle(ran(exited(0), " {\"n\": 1}\n", ""));
        assert_eq!(ok.map(|j| j.as_str().to_string()).ok().as_deref(), Some("{\"n\": 1}"));
        assert!(settle(ran(exited(0), "\n", "")).is_ok_and(|j| j.is_null()));
        let permanent = settle(ran(exited(EXIT_PERMANENT), "", "bad row 7\n")).err();
        assert_eq!(permanent.as_ref().map(TaskError::is_retryable), Some(false));
        let envelope = permanent.map(|e| e.envelope().clone());
        assert_eq!(envelope.as_ref().map(|e| e.details["stderr"].clone()), Some(json!("bad row 7\n")));
        assert_eq!(envelope.as_ref().map(|e| e.details["exit_code"].clone()), Some(json!(65)));
        assert!(envelope.is_some_and(|e| e.message.ends_with("failed for good): bad row 7")));
        let not_found = settle(ran(exited(127), "", "sh: 1: resize.py: not found\n")).err();
        let message = not_found.map(|e| e.envelope().message.clone()).unwrap_or_default();
        assert_eq!(message, "the command exited with code 127 (command not found): sh: 1: resize.py: not found");
        for code in [EXIT_RETRY, 1, 2, 127] {
            assert!(settle(ran(exited(code), "", "")).is_err_and(|e| e.is_retryable()), "{code}");
        }
        let killed = settle(ran(ExitStatus::from_raw(9), "", "")).err();
        assert!(killed.is_some_and(|e| e.is_retryable() && e.envelope().details["signal"] == json!(9)));
    }

    #[test]
    fn stdout_that_is_not_json_fails_for_good() {
        let error = settle(ran(exited(0), "done: 3 rows", "")).err();
        let envelope = error.as_ref().map(|e| e.envelope().clone());
        assert_eq!(error.map(|e| e.is_retryable()), Some(false));
        assert_eq!(envelope.as_ref().map(|e| e.code.as_str()), Some("invalid_result"));
        assert!(envelope.is_some_and(|e| e.message.contains("is not valid JSON: ")));
        assert!(settle(ran(exited(0), "1 2", "")).is_err());
    }
}
