//! Exit codes and the one line a failure prints.
//!
//! Scripts branch on the exit code, so each code has one meaning (listed in
//! `--help`): 0 done, 1 failed (the database or the task did), 2 usage (bad
//! input; nothing was written), 3 not found, 4 timed out. A failure prints
//! one line on stderr, `cairnq: ...`, and nothing on stdout.

use cairnq_core::{Error, ErrorKind};

/// What the process tells its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Done.
    Ok = 0,
    /// The operation failed: the database, or the task waited for.
    Failed = 1,
    /// Bad input (arguments, JSON, durations); nothing was written.
    Usage = 2,
    /// No task has that id or key.
    NotFound = 3,
    /// A wait ran out of time (the task keeps running).
    Timeout = 4,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit as u8)
    }
}

/// What `--help` says about exit codes.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  done
  1  failed: the database could not do it, the task waited for failed or was canceled,
     or doctor found a problem
  2  usage: bad input (arguments, JSON, durations, filters); nothing was written
  3  not found: no task has that id or key (no schedule has that name)
  4  timeout: a wait ran out of time (the task keeps running)

Output: stdout carries data only (-o json: one document; -o jsonl: one per line);
messages go to stderr. Colour only on a terminal, never with NO_COLOR set.";

/// A command that did not succeed: its exit code and its one line.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self { exit, message: message.into() }
    }

    /// Bad input: exit 2.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    /// Nothing under that id or key: exit 3.
    pub(crate) fn not_found(what: impl std::fmt::Display) -> Self {
        Self::new(Exit::NotFound, format!("no task {what}"))
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let exit = match error.kind() {
            ErrorKind::ValidationError | ErrorKind::SerializationError => Exit::Usage,
            ErrorKind::NotFound => Exit::NotFound,
            ErrorKind::TaskTimeout => Exit::Timeout,
            _ => Exit::Failed,
        };
        Self::new(exit, error.to_string())
    }
}

/// Prints the failure's line (on one line, whatever the message held) and
/// returns its exit code.
pub(crate) fn report(failure: &Failure) -> std::process::ExitCode {
    let line: String = failure.message.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("cairnq: {line}");
    failure.exit.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_errors_map_to_their_exit_codes() {
        let code = |e: Error| Failure::from(e).exit;
        assert_eq!(code(Error::validation("queue", "bad")), Exit::Usage);
        assert_eq!(code(Error::NotFound { task_id: "t".into() }), Exit::NotFound);
        assert_eq!(code(Error::StoreClosed), Exit::Failed);
    }
}
