//! The command's output pipes, served at once so a chatty command never
//! blocks on a full pipe: stdout read up to a limit (the rest read and
//! dropped), and stderr split into lines, where
//! `progress 0.5 optional message` lines become progress reports and every
//! other line is kept for the tail that goes into an error envelope.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{ChildStderr, ChildStdout};
use tokio::sync::{Notify, watch};

use crate::context::TaskContext;

/// How much of stderr an error envelope keeps: its last 4 KB.
pub(super) const STDERR_TAIL_BYTES: usize = 4096;

/// Lines longer than this are never progress reports (they go to the tail
/// as they stream, unbuffered).
const PROGRESS_LINE_MAX: usize = 1024;

const CHUNK: usize = 8192;

/// What the command wrote to stdout, up to the limit.
#[derive(Debug, Default)]
pub(super) struct Stdout {
    pub(super) bytes: Vec<u8>,
    /// More than the limit came (and was dropped).
    pub(super) overflowed: bool,
}

/// Reads stdout to its end, keeping at most `limit` bytes; past the limit
/// it notifies `overflow` once (the caller stops the command) and keeps
/// reading, so the command is never blocked on a full pipe meanwhile.
pub(super) async fn read_stdout(pipe: Option<ChildStdout>, limit: u64, overflow: &Notify) -> std::io::Result<Stdout> {
    let mut out = Stdout::default();
    let Some(mut pipe) = pipe else { return Ok(out) };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut chunk = vec![0; CHUNK];
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok(out);
        }
        if out.overflowed {
            continue;
        }
        let room = limit - out.bytes.len();
        out.bytes.extend_from_slice(&chunk[..n.min(room)]);
        if n > room {
            out.overflowed = true;
            out.bytes = Vec::new();
            overflow.notify_one();
        }
    }
}

/// One `progress VALUE [MESSAGE]` line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ProgressLine {
    pub(super) value: f64,
    pub(super) message: Option<String>,
}

impl ProgressLine {
    /// `progress`, whitespace, a number in 0..1, then an optional message.
    /// Anything else (another word, a value out of range) is not one.
    pub(super) fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("progress")?;
        if !rest.starts_with([' ', '\t']) {
            return None;
        }
        let rest = rest.trim();
        let (number, message) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
        let value: f64 = number.parse().ok()?;
        if !(0.0..=1.0).contains(&value) {
            return None;
        }
        let message = message.trim();
        Some(Self { value, message: (!message.is_empty()).then(|| message.to_string()) })
    }
}

/// Reads stderr to its end, reporting progress lines as it goes; returns
/// the tail of every other line (lossy UTF-8, at most
/// [`STDERR_TAIL_BYTES`]). Progress writes are coalesced (a command
/// reporting faster than the store writes only has its latest report
/// written) and all written before this returns, so none lands after the
/// task is settled.
pub(super) async fn watch_stderr(pipe: Option<ChildStderr>, ctx: &TaskContext) -> String {
    let (reports, latest) = watch::channel(None);
    let read = async move {
        let mut lines = StderrLines::default();
        if let Some(pipe) = pipe {
            read_lines(pipe, &mut lines, |line| {
                reports.send_replace(Some(line));
            })
            .await;
        }
        lines.into_tail()
        // `reports` drops here: the writer ends after the last report.
    };
    let (tail, ()) = tokio::join!(read, write_progress(ctx, latest));
    tail
}

async fn read_lines(mut pipe: impl AsyncRead + Unpin, lines: &mut StderrLines, mut report: impl FnMut(ProgressLine)) {
    let mut chunk = vec![0; CHUNK];
    // A read error ends stderr like its end does: the tail so far stands.
    while let Ok(n) = pipe.read(&mut chunk).await
        && n > 0
    {
        lines.feed(&chunk[..n], &mut report);
    }
    lines.end_line(false, &mut report);
}

pub(super) async fn write_progress(ctx: &TaskContext, mut latest: watch::Receiver<Option<ProgressLine>>) {
    // `changed` still answers a report sent just before the sender dropped.
    while latest.changed().await.is_ok() {
        let Some(line) = latest.borrow_and_update().clone() else { continue };
        let report = ctx.progress(line.value);
        let report = match line.message {
            Some(message) => report.message(message),
            None => report,
        };
        // Progress is advisory: a refused write (a lost lease, a message
        // the store will not take, a store hiccup) must not fail the task.
        let _ = report.await;
    }
}

/// Splits stderr into lines: progress lines are reported, the others kept
/// in a bounded tail.
#[derive(Debug, Default)]
pub(super) struct StderrLines {
    /// The current line, while it may still be a progress line.
    line: Vec<u8>,
    /// The current line outgrew [`PROGRESS_LINE_MAX`] and streams to the tail.
    long_line: bool,
    tail: VecDeque<u8>,
}

impl StderrLines {
    pub(super) fn feed(&mut self, mut bytes: &[u8], report: &mut impl FnMut(ProgressLine)) {
        while !bytes.is_empty() {
            let (part, ends_line) = match bytes.iter().position(|b| *b == b'\n') {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            if self.long_line {
                self.keep(part);
            } else {
                self.line.extend_from_slice(part);
                if self.line.len() > PROGRESS_LINE_MAX {
                    let line = std::mem::take(&mut self.line);
                    self.keep(&line);
                    self.long_line = true;
                }
            }
            if ends_line {
                self.end_line(true, report);
                bytes = &bytes[part.len() + 1..];
            } else {
                bytes = &[];
            }
        }
    }

    /// Ends the current line: at a newline, or (`newline` false) at the
    /// end of stderr, where the tail gets no newline the command did not
    /// write.
    pub(super) fn end_line(&mut self, newline: bool, report: &mut impl FnMut(ProgressLine)) {
        let ending: &[u8] = if newline { b"\n" } else { b"" };
        if self.long_line {
            self.keep(ending);
        } else if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let text = std::str::from_utf8(&line).ok().map(|t| t.strip_suffix('\r').unwrap_or(t));
            match text.and_then(ProgressLine::parse) {
                Some(progress) => report(progress),
                None => {
                    self.keep(&line);
                    self.keep(ending);
                }
            }
        }
        self.long_line = false;
    }

    fn keep(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(STDERR_TAIL_BYTES);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    pub(super) fn into_tail(self) -> String {
        let (front, back) = self.tail.as_slices();
        let bytes = [front, back].concat();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    //! Line splitting, the progress grammar and the tail bound.

    use super::*;

    fn run(chunks: &[&[u8]]) -> (Vec<ProgressLine>, String) {
        let mut lines = StderrLines::default();
        let mut seen = Vec::new();
        let mut report = |p| seen.push(p);
        for chunk in chunks {
            lines.feed(chunk, &mut report);
        }
        lines.end_line(false, &mut report);
        (seen, lines.into_tail())
    }

    #[test]
    fn progress_lines_are_reported_and_the_rest_kept() {
        let (seen, tail) = run(&[b"starting\npro", b"gress 0.5 half way there\r\nprogress 1\n", b"done"]);
        assert_eq!(
            seen,
            vec![
                ProgressLine { value: 0.5, message: Some("half way there".into()) },
                ProgressLine { value: 1.0, message: None },
            ]
        );
        assert_eq!(tail, "starting\ndone");
    }

    #[test]
    fn lines_that_only_look_like_progress_are_kept() {
        for line in ["progress", "progress 1.5", "progress -0.1", "progress NaN", "progressive 0.5", "progress half"] {
            assert_eq!(ProgressLine::parse(line), None, "{line}");
        }
        let (seen, tail) = run(&[b"progress 2 too far\n"]);
        assert!(seen.is_empty());
        assert_eq!(tail, "progress 2 too far\n");
    }

    #[test]
    fn the_tail_keeps_the_last_4_kb_even_of_one_long_line() {
        let long = vec![b'x'; 10_000];
        let (_, tail) = run(&[b"first\n", &long, b"\nlast line\n"]);
        assert_eq!(tail.len(), STDERR_TAIL_BYTES);
        assert!(tail.ends_with("x\nlast line\n"));
        assert!(!tail.contains("first"));
    }
}
