//! `cairnq cancel` and `cairnq retry`: one task by id or `--key`, or every
//! task matching a filter. A filter goes through the library's own bulk
//! rule (`CairnQ::cancel_matching` / `retry_matching`: which statuses it
//! takes, one task at a time, so a task that changed state meanwhile is
//! left alone) and the confirm/preview rule every destructive command
//! shares ([`confirm`]).

use cairnq_core::{BulkAction, BulkOutcome, CairnQ, Task, TaskStatus};

use crate::commands::Context;
use crate::commands::confirm::{self, CAP, Guard};
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
    #[command(flatten)]
    guard: Guard,
}

#[derive(Debug, clap::Args)]
#[command(after_help = confirm::RULE)]
pub(crate) struct CancelArgs {
    #[command(flatten)]
    selection: Selection,
}

#[derive(Debug, clap::Args)]
#[command(after_help = confirm::RULE)]
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
    /// The statuses this action moves one named task out of.
    fn movable_statuses(self) -> &'static [TaskStatus] {
        match self {
            Self::Cancel => &[TaskStatus::Queued, TaskStatus::Running],
            Self::Retry { .. } => &[TaskStatus::Failed, TaskStatus::Canceled],
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Retry { .. } => "retry",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Self::Cancel => "canceled",
            Self::Retry { .. } => "retried",
        }
    }

    /// The library's bulk action of this kind on `filter`.
    fn matching<'a>(self, client: &'a CairnQ, filter: &cairnq_core::ListFilter, cap: usize) -> BulkAction<'a> {
        match self {
            Self::Cancel => client.cancel_matching(filter, cap),
            Self::Retry { reset_attempt: true } => client.retry_matching(filter, cap).reset_attempt(),
            Self::Retry { reset_attempt: false } => client.retry_matching(filter, cap),
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

pub(crate) async fn cancel(context: &Context, args: CancelArgs) -> Result<Exit, Failure> {
    run(context, args.selection, Action::Cancel).await
}

pub(crate) async fn retry(context: &Context, args: RetryArgs) -> Result<Exit, Failure> {
    run(context, args.selection, Action::Retry { reset_attempt: args.reset_attempt }).await
}

async fn run(context: &Context, selection: Selection, action: Action) -> Result<Exit, Failure> {
    if selection.id.is_none() && selection.key.is_none() && !selection.filter.any() {
        return Err(Failure::usage(format!(
            "say which tasks to {}: a task id, --key, or a filter (--status, --queue, --name)",
            action.verb()
        )));
    }
    let client = context.existing().await?;
    if selection.id.is_some() || selection.key.is_some() {
        return one(context, &client, &selection, action).await;
    }
    let filter = selection.filter.list(selection.filter.status());
    if selection.guard.dry_run {
        let preview = action.matching(&client, &filter, CAP).dry_run().await?;
        return confirm::preview(context, action.verb(), &preview.tasks, preview.capped);
    }
    let outcome = if selection.guard.yes {
        action.matching(&client, &filter, CAP).await?
    } else {
        let preview = action.matching(&client, &filter, CAP).dry_run().await?;
        if preview.tasks.is_empty() {
            preview
        } else {
            confirm::confirm(&selection.guard, action.verb(), preview.tasks.len(), preview.capped).await?;
            let seen = confirm::as_previewed(&filter, &preview.tasks);
            let mut outcome = action.matching(&client, &seen, preview.tasks.len()).await?;
            outcome.capped = preview.capped;
            outcome
        }
    };
    report(context, action, &outcome)
}

/// One task, named by id or key: it is changed at once (naming it is the
/// confirmation), or with `--dry-run` shown.
async fn one(context: &Context, client: &CairnQ, selection: &Selection, action: Action) -> Result<Exit, Failure> {
    let task = find(client, selection.id.as_deref(), selection.key.as_deref()).await?;
    if !action.movable_statuses().contains(&task.status) {
        return Err(Failure::new(
            Exit::Failed,
            format!("task {} is {}: nothing to {}", task.id, task.status, action.verb()),
        ));
    }
    if selection.guard.dry_run {
        return confirm::preview(context, action.verb(), std::slice::from_ref(&task), false);
    }
    let changed = action.apply(client, &task.id).await?;
    let skipped = if changed.is_none() { vec![task.id] } else { Vec::new() };
    let mut outcome = BulkOutcome::default();
    outcome.tasks.extend(changed);
    outcome.skipped = skipped;
    report(context, action, &outcome)
}

fn report(context: &Context, action: Action, outcome: &BulkOutcome) -> Result<Exit, Failure> {
    context.out.tasks(&outcome.tasks)?;
    if context.out.format == Format::Table {
        let skipped = outcome.skipped.len();
        let note = if skipped > 0 {
            format!(" ({skipped} changed state meanwhile and were left alone)")
        } else {
            String::new()
        };
        hint(&format!("{}: {} task(s){note}", action.past(), outcome.tasks.len()));
    }
    if outcome.capped {
        hint(&format!("more than {CAP} tasks matched: only the first {CAP} were taken; run again for the rest"));
    }
    Ok(Exit::Ok)
}
