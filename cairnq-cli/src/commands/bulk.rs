//! `cairnq cancel` and `cairnq retry`: one task by id or `--key`, or every
//! task matching a filter. A filter that matches more than one task needs
//! `--yes`; `--dry-run` counts and changes nothing. Both go through the
//! library's own cancel and retry, one task at a time, so a task that
//! changed state meanwhile is left alone.

use cairnq_core::{CairnQ, Task, TaskStatus};
use serde::Serialize;

use crate::commands::Context;
use crate::commands::filter::FilterArgs;
use crate::commands::read::find;
use crate::exit::{Exit, Failure};
use crate::output::{Format, hint};

/// Which tasks: an id, a key, or a filter.
#[derive(Debug, clap::Args)]
pub(crate) struct Selection {
    /// The task id.
    #[arg(conflicts_with_all = ["key", "status", "queue", "name"])]
    id: Option<String>,
    /// The task this business key points at.
    #[arg(long, conflicts_with_all = ["status", "queue", "name"])]
    key: Option<String>,
    // Without --status, retry takes failed tasks, cancel queued and running ones.
    #[command(flatten)]
    filter: FilterArgs,
    /// Count the tasks that would change; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Go ahead when more than one task matches.
    #[arg(long)]
    yes: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CancelArgs {
    #[command(flatten)]
    selection: Selection,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RetryArgs {
    #[command(flatten)]
    selection: Selection,
    /// Start the attempt count over (the task gets max_attempts claims again).
    #[arg(long)]
    reset_attempt: bool,
}

/// What a bulk command does to each task.
#[derive(Clone, Copy)]
enum Action {
    Cancel,
    Retry { reset_attempt: bool },
}

impl Action {
    /// The statuses this action moves a task out of.
    fn movable_statuses(self) -> &'static [TaskStatus] {
        match self {
            Self::Cancel => &[TaskStatus::Queued, TaskStatus::Running],
            Self::Retry { .. } => &[TaskStatus::Failed, TaskStatus::Canceled],
        }
    }

    /// The statuses a filter without `--status` selects.
    fn default_statuses(self) -> &'static [TaskStatus] {
        match self {
            Self::Cancel => &[TaskStatus::Queued, TaskStatus::Running],
            Self::Retry { .. } => &[TaskStatus::Failed],
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Retry { .. } => "retry",
        }
    }

    async fn apply(self, client: &CairnQ, id: &str) -> Result<Option<Task>, Failure> {
        Ok(match self {
            Self::Cancel => client.cancel(id).await?,
            Self::Retry { reset_attempt: true } => client.retry(id).reset_attempt().await?,
            Self::Retry { reset_attempt: false } => client.retry(id).await?,
        })
    }
}

/// What `--dry-run` prints as JSON.
#[derive(Serialize)]
struct DryRun<'a> {
    dry_run: bool,
    action: &'a str,
    count: usize,
    ids: &'a [String],
}

/// Matching tasks are read in pages of this many.
const PAGE: u32 = 500;

pub(crate) async fn cancel(context: &Context, args: CancelArgs) -> Result<Exit, Failure> {
    run(context, args.selection, Action::Cancel).await
}

pub(crate) async fn retry(context: &Context, args: RetryArgs) -> Result<Exit, Failure> {
    run(context, args.selection, Action::Retry { reset_attempt: args.reset_attempt }).await
}

async fn run(context: &Context, selection: Selection, action: Action) -> Result<Exit, Failure> {
    let statuses = statuses(&selection, action)?;
    let client = context.existing().await?;
    let ids = match (&selection.id, &selection.key) {
        (None, None) => matching(&client, &selection, &statuses).await?,
        (id, key) => {
            let task = find(&client, id.as_deref(), key.as_deref()).await?;
            if !action.movable_statuses().contains(&task.status) {
                return Err(Failure::new(
                    Exit::Failed,
                    format!("task {} is {}: nothing to {}", task.id, task.status, action.verb()),
                ));
            }
            vec![task.id]
        }
    };
    if selection.dry_run {
        return dry_run(context, action, &ids);
    }
    if ids.len() > 1 && !selection.yes {
        return Err(Failure::usage(format!(
            "{} tasks match: pass --yes to {} them all (--dry-run lists them); nothing was changed",
            ids.len(),
            action.verb()
        )));
    }
    let mut changed = Vec::with_capacity(ids.len());
    for id in &ids {
        if let Some(task) = action.apply(&client, id).await? {
            changed.push(task);
        }
    }
    context.out.tasks(&changed)?;
    if context.out.format == Format::Table {
        let skipped = ids.len() - changed.len();
        let note = if skipped > 0 {
            format!(" ({skipped} changed state meanwhile and were left alone)")
        } else {
            String::new()
        };
        hint(&format!("{}: {} task(s){note}", past(action), changed.len()));
    }
    Ok(Exit::Ok)
}

fn past(action: Action) -> &'static str {
    match action {
        Action::Cancel => "canceled",
        Action::Retry { .. } => "retried",
    }
}

/// The statuses a filter selects, refused when the action cannot move
/// them or when no filter is given at all.
fn statuses(selection: &Selection, action: Action) -> Result<Vec<TaskStatus>, Failure> {
    if selection.id.is_none() && selection.key.is_none() && !selection.filter.any() {
        return Err(Failure::usage(format!(
            "say which tasks to {}: a task id, --key, or a filter (--status, --queue, --name)",
            action.verb()
        )));
    }
    match selection.filter.status() {
        Some(status) if !action.movable_statuses().contains(&status) => Err(Failure::usage(format!(
            "--status {status}: only {} tasks can be {}",
            action.movable_statuses().iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" or "),
            past(action)
        ))),
        Some(status) => Ok(vec![status]),
        None => Ok(action.default_statuses().to_vec()),
    }
}

/// Every id matching the filter, in list order (keyset pages).
async fn matching(client: &CairnQ, selection: &Selection, statuses: &[TaskStatus]) -> Result<Vec<String>, Failure> {
    let mut ids = Vec::new();
    for status in statuses {
        let mut filter = selection.filter.list(Some(*status)).limit(PAGE);
        loop {
            let page = client.list(&filter).await?;
            ids.extend(page.tasks.into_iter().map(|task| task.id));
            match page.next {
                Some(next) => filter = filter.after(next),
                None => break,
            }
        }
    }
    Ok(ids)
}

fn dry_run(context: &Context, action: Action, ids: &[String]) -> Result<Exit, Failure> {
    match context.out.format {
        Format::Table => {
            context.out.text(&format!("{} task(s) would be {}\n", ids.len(), past(action)))?;
            hint("dry run: nothing was changed");
        }
        _ => context.out.json(&DryRun { dry_run: true, action: action.verb(), count: ids.len(), ids })?,
    }
    Ok(Exit::Ok)
}
