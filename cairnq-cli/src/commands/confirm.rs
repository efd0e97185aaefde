//! The one confirm/preview rule of the commands that change or delete
//! tasks in bulk (`cancel`, `retry`, `purge`), written once so the three
//! cannot drift apart: `--dry-run` lists what would be affected and changes
//! nothing; `--yes` goes ahead; without `--yes` a terminal is asked, and
//! anything else (a script, a pipe, cron) is refused with exit 2, since
//! nobody is there to answer.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, UNIX_EPOCH};

use cairnq_core::{ListFilter, Task, TaskStatus};
use serde::Serialize;

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::output::{Format, hint, status_cell};
use crate::table::Table;

/// The rule as `--help` states it, under each command's options.
pub(crate) const RULE: &str = "\
Confirmation: a command naming one task (an id or --key) acts at once. One that selects tasks
by filter, and every purge, first reads what it would affect: --dry-run lists those tasks
(id, name, queue, status; -o json for a document) and changes nothing; --yes goes ahead; without
--yes a terminal is asked (anything but y/yes changes nothing, exit 1), and a run that is not on
a terminal (a script, a pipe) is refused with exit 2. cancel and retry take at most 10,000
tasks per run (run again for the rest); purge deletes all it matches, in batches.";

/// The most tasks one run previews or changes.
pub(crate) const CAP: usize = 10_000;

/// `--dry-run` and `--yes`, the same on every destructive command.
#[derive(Debug, clap::Args)]
pub(crate) struct Guard {
    /// List the tasks that would be affected (id, name, queue, status); change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Go ahead without asking.
    #[arg(long)]
    pub(crate) yes: bool,
}

/// One task of a preview, as `-o json` prints it.
#[derive(Serialize)]
struct Affected<'a> {
    id: &'a str,
    name: &'a str,
    queue: &'a str,
    status: TaskStatus,
}

/// What `--dry-run` prints as JSON.
#[derive(Serialize)]
struct DryRun<'a> {
    dry_run: bool,
    action: &'a str,
    count: usize,
    /// More than `count` matched: the preview stops at [`CAP`].
    capped: bool,
    tasks: Vec<Affected<'a>>,
}

/// Prints the tasks `action` (`cancel`, `retry`, `purge`) would affect.
pub(crate) fn preview(context: &Context, action: &str, tasks: &[Task], capped: bool) -> Result<Exit, Failure> {
    match context.out.format {
        Format::Table => {
            let mut table = Table::new(vec!["ID", "NAME", "QUEUE", "STATUS"]);
            for task in tasks {
                let (id, name, queue) = (task.id.clone(), task.name.clone(), task.queue.clone());
                table.row(vec![id.into(), name.into(), queue.into(), status_cell(task.status)]);
            }
            context.out.text(&table.render(context.out.colour))?;
            let more = if capped { format!(" (the first {CAP}; more match)") } else { String::new() };
            hint(&format!("dry run: {action} would affect {} task(s){more}; nothing was changed", tasks.len()));
        }
        _ => {
            let tasks: Vec<Affected<'_>> = tasks
                .iter()
                .map(|t| Affected { id: &t.id, name: &t.name, queue: &t.queue, status: t.status })
                .collect();
            context.out.json(&DryRun { dry_run: true, action, count: tasks.len(), capped, tasks })?;
        }
    }
    Ok(Exit::Ok)
}

/// Goes ahead when `--yes` was given or a person on the terminal says so;
/// refuses otherwise. `verb` is what would happen to the `count` tasks
/// found (`capped`: more were).
pub(crate) async fn confirm(guard: &Guard, verb: &str, count: usize, capped: bool) -> Result<(), Failure> {
    if guard.yes {
        return Ok(());
    }
    let many = if capped { format!("more than {count} tasks match") } else { matches(count) };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::usage(format!(
            "{many}: pass --yes to {verb} them (--dry-run lists them); nothing was changed"
        )));
    }
    let question = format!("{many}: {verb} {}? [y/N] ", if count == 1 { "it" } else { "them" });
    let answer = tokio::task::spawn_blocking(move || ask(&question))
        .await
        .map_err(|e| Failure::new(Exit::Failed, format!("cannot ask for confirmation: {e}")))?;
    if yes(&answer) { Ok(()) } else { Err(Failure::new(Exit::Failed, "not confirmed: nothing was changed")) }
}

/// The filter narrowed to the tasks a preview showed: none created after
/// the newest of them, so a task submitted while a person read the
/// question is not changed unseen.
pub(crate) fn as_previewed(filter: &ListFilter, tasks: &[Task]) -> ListFilter {
    let Some(newest) = tasks.iter().map(|t| t.created_at_ms).max() else { return filter.clone() };
    let until = filter.created_until_ms.map_or(newest, |until| until.min(newest));
    let at = if until >= 0 {
        UNIX_EPOCH + Duration::from_millis(until.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_millis(until.unsigned_abs())
    };
    filter.clone().created_until(at)
}

/// "1 task matches", "3 tasks match".
fn matches(count: usize) -> String {
    if count == 1 { "1 task matches".to_string() } else { format!("{count} tasks match") }
}

/// Asks on stderr and reads one line of stdin (empty at its end).
fn ask(question: &str) -> String {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer
}

/// Whether an answer agrees: `y` or `yes`, in any case.
fn yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_y_or_yes_agrees() {
        for answer in ["y\n", "YES\n", " yes "] {
            assert!(yes(answer), "{answer:?}");
        }
        for answer in ["", "\n", "n\n", "no", "yep", "sure"] {
            assert!(!yes(answer), "{answer:?}");
        }
    }

    #[test]
    fn counts_read_as_words() {
        assert_eq!(matches(1), "1 task matches");
        assert_eq!(matches(3), "3 tasks match");
    }

    #[test]
    fn the_rule_names_both_flags_and_the_exit_codes() {
        for says in ["--dry-run", "--yes", "exit 2", "exit 1", "terminal"] {
            assert!(RULE.contains(says), "{says}");
        }
    }
}
