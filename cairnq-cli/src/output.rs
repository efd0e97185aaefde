//! How results are written: `-o table` (people: aligned tables, relative
//! times, colour on a terminal), `-o json` (one document) or `-o jsonl` (one
//! document per line). Only data goes to stdout; hints go to stderr.

use std::io::{IsTerminal, Write};

use cairnq_core::{DependencyFailure, Task, TaskStatus, TaskWait, is_waiting, now_ms};
use serde::Serialize;

use crate::exit::Failure;
use crate::humanize::relative;
use crate::table::{Cell, Table, Tone, truncated};

/// The `-o` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Aligned tables for people.
    Table,
    /// One JSON document.
    Json,
    /// One JSON document per line (a task, a count, a snapshot).
    Jsonl,
}

/// Where and how a command writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    pub(crate) format: Format,
    /// Colour on stdout: a terminal, and no NO_COLOR.
    pub(crate) colour: bool,
    /// stdout is a terminal (a redraw may clear it).
    pub(crate) terminal: bool,
}

/// Payload text in a list's table cell.
const CELL_PAYLOAD: usize = 40;
/// Error message text in a list's table cell: enough to tell one failure
/// from another; `get` and `-o json` show the whole envelope.
const CELL_ERROR: usize = 60;
/// Payload, result and error text in a single task's view.
const DETAIL_JSON: usize = 400;

impl Output {
    pub(crate) fn new(format: Format) -> Self {
        let terminal = std::io::stdout().is_terminal();
        Self { format, colour: terminal && colour_allowed(), terminal }
    }

    /// Writes `text` to stdout as is.
    pub(crate) fn text(&self, text: &str) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(write_failed)
    }

    /// Writes one JSON document (pretty for `json`, one line for `jsonl`).
    pub(crate) fn json<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), Failure> {
        let text = match self.format {
            Format::Json => serde_json::to_string_pretty(value),
            _ => serde_json::to_string(value),
        };
        self.json_text(text)
    }

    /// Writes one JSON document on one line, whatever the format: one of a
    /// stream (`stats --watch`), where a document spread over lines could
    /// not be told from the next.
    pub(crate) fn json_line<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), Failure> {
        self.json_text(serde_json::to_string(value))
    }

    fn json_text(&self, text: serde_json::Result<String>) -> Result<(), Failure> {
        let text = text.map_err(|e| Failure::new(crate::exit::Exit::Failed, format!("cannot write JSON: {e}")))?;
        self.text(&format!("{text}\n"))
    }

    /// One task: a detail view, or its JSON.
    pub(crate) fn task(&self, task: &Task) -> Result<(), Failure> {
        self.task_keyed(task, None, None)
    }

    /// One task and the business key pointing at it, when it has one: a
    /// detail view with a "key" row, or the task's JSON (the library's
    /// `Task`, which has no key).
    /// With a `wait` (the task was submitted after others), a "waits for"
    /// row says how far along it is, and "run at" says it waits.
    pub(crate) fn task_keyed(&self, task: &Task, key: Option<&str>, wait: Option<&TaskWait>) -> Result<(), Failure> {
        if self.format != Format::Table {
            return self.json(task);
        }
        let now = now_ms();
        let when = |at: Option<i64>| at.map_or_else(|| "-".to_string(), |at| relative(at, now));
        let json = |value: Option<&cairnq_core::Json>| value.map_or("-".into(), |v| truncated(v.as_str(), DETAIL_JSON));
        let mut table = Table::new(vec!["FIELD", "VALUE"]);
        let rows: Vec<(&str, Cell)> = vec![
            ("id", task.id.clone().into()),
            ("name", task.name.clone().into()),
            ("queue", task.queue.clone().into()),
            ("status", status_cell(task.status)),
            ("attempt", format!("{} of {}", task.attempt, task.max_attempts).into()),
            ("priority", task.priority.to_string().into()),
            ("progress", task.progress.map_or("-".into(), |p| format!("{:.0}%", p * 100.0)).into()),
            ("message", task.message.clone().unwrap_or_else(|| "-".into()).into()),
            ("worker", task.worker_id.clone().unwrap_or_else(|| "-".into()).into()),
            ("created", when(Some(task.created_at_ms)).into()),
            (
                "run at",
                if is_waiting(task) { "when its dependencies end".into() } else { when(Some(task.run_at_ms)).into() },
            ),
            ("lease until", when(task.lease_until_ms).into()),
            ("completed", when(task.completed_at_ms).into()),
            ("parent", task.parent_id.clone().unwrap_or_else(|| "-".into()).into()),
            ("root", task.root_id.clone().unwrap_or_else(|| "-".into()).into()),
            ("correlation", task.correlation_id.clone().unwrap_or_else(|| "-".into()).into()),
            ("payload", json(Some(&task.payload)).into()),
            ("result", json(task.result.as_ref()).into()),
            ("error", json(task.error.as_ref()).into()),
            ("metadata", json(Some(&task.metadata)).into()),
        ];
        for (field, value) in rows {
            table.row(vec![field.into(), value]);
            if let ("id", Some(key)) = (field, key) {
                table.row(vec!["key".into(), key.to_string().into()]);
            }
            if let ("status", Some(wait)) = (field, wait) {
                table.row(vec!["waits for".into(), waits_for(wait).into()]);
            }
            if let ("attempt", Some(lost)) = (field, lost_lease(task)) {
                table.row(vec!["lost attempt".into(), Cell::new(lost, Tone::Bad)]);
            }
        }
        self.text(&table.render(self.colour))
    }

    /// Many tasks: a table, one JSON array, or one task per line.
    pub(crate) fn tasks(&self, tasks: &[Task]) -> Result<(), Failure> {
        self.tasks_waiting(tasks, &[])
    }

    /// [`tasks`](Self::tasks), the status of each task in `waits` that
    /// still waits saying for how many of its dependencies.
    pub(crate) fn tasks_waiting(&self, tasks: &[Task], waits: &[TaskWait]) -> Result<(), Failure> {
        self.list(tasks, || task_table(tasks, waits))
    }

    /// A list as the format asks: `table` (built only then) rendered, one
    /// JSON array of `items`, or one item per line.
    pub(crate) fn list<T: Serialize>(&self, items: &[T], table: impl FnOnce() -> Table) -> Result<(), Failure> {
        match self.format {
            Format::Table => self.text(&table().render(self.colour)),
            Format::Json => self.json(items),
            Format::Jsonl => items.iter().try_for_each(|item| self.json(item)),
        }
    }
}

/// The list view of tasks: one row each, payload and error message cut
/// short (the message of the error envelope, not its JSON).
pub(crate) fn task_table(tasks: &[Task], waits: &[TaskWait]) -> Table {
    let now = now_ms();
    let mut table = Table::new(vec!["ID", "NAME", "QUEUE", "STATUS", "ATTEMPT", "PRI", "CREATED", "PAYLOAD", "ERROR"]);
    for task in tasks {
        table.row(vec![
            task.id.clone().into(),
            task.name.clone().into(),
            task.queue.clone().into(),
            match waits.iter().find(|w| w.task_id == task.id).and_then(TaskWait::describe) {
                Some(waiting) => Cell::new(format!("queued, {waiting}"), Tone::Waiting),
                None => status_cell(task.status),
            },
            format!("{}/{}", task.attempt, task.max_attempts).into(),
            task.priority.to_string().into(),
            relative(task.created_at_ms, now).into(),
            truncated(task.payload.as_str(), CELL_PAYLOAD).into(),
            task.error_message().map_or_else(|| "-".into(), |m| Cell::new(truncated(&m, CELL_ERROR), Tone::Bad)),
        ]);
    }
    table
}

/// The "waits for" row: how far along a wait is, or that it is over.
fn waits_for(wait: &TaskWait) -> String {
    let noun = if wait.total == 1 { "task" } else { "tasks" };
    let policy = match wait.on_failure {
        DependencyFailure::Run => "runs even if one fails",
        _ => "canceled if one fails",
    };
    match wait.describe() {
        Some(waiting) => format!("{waiting} ({policy})"),
        None if wait.remaining == 0 => format!("{} {noun}, all ended ({policy})", wait.total),
        None => format!("{} {noun}, {} not ended ({policy})", wait.total, wait.remaining),
    }
}

/// The attempt an expired lease ended (the worker died or stalled), as the
/// row tells it ([`Task::lease_lost_attempt`]).
fn lost_lease(task: &Task) -> Option<String> {
    let attempt = task.lease_lost_attempt()?;
    let then =
        if task.status == TaskStatus::Failed { "no attempts were left" } else { "the task went back to the queue" };
    Some(format!("attempt {attempt}: its lease expired (the worker died or stalled); {then}"))
}

/// A status, coloured by what it means.
pub(crate) fn status_cell(status: TaskStatus) -> Cell {
    Cell::new(status.as_str(), status_tone(status))
}

/// The colour of a status.
pub(crate) fn status_tone(status: TaskStatus) -> Tone {
    match status {
        TaskStatus::Queued => Tone::Waiting,
        TaskStatus::Running => Tone::Busy,
        TaskStatus::Succeeded => Tone::Good,
        TaskStatus::Failed => Tone::Bad,
        TaskStatus::Canceled => Tone::Dim,
    }
}

/// NO_COLOR (set and not empty) turns colour off everywhere.
pub(crate) fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A hint for people, on stderr (never mixed into data).
pub(crate) fn hint(text: &str) {
    eprintln!("{text}");
}

fn write_failed(e: std::io::Error) -> Failure {
    Failure::new(crate::exit::Exit::Failed, format!("cannot write to stdout: {e}"))
}
