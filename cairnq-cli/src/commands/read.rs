//! `cairnq get` and `cairnq list`: reading tasks. Both open the database
//! as it is (never creating or migrating it).

use std::time::SystemTime;

use cairnq_core::{CairnQ, ListCursor, ListFilter, Task, TaskWait, is_waiting};

use crate::commands::Context;
use crate::commands::filter::FilterArgs;
use crate::exit::{Exit, Failure};
use crate::humanize;
use crate::output::{Format, hint};
use crate::steps_view::{TaskWithSteps, step_table};

/// A task by id or by `--key`.
#[derive(Debug, clap::Args)]
pub(crate) struct GetArgs {
    /// The task id.
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    id: Option<String>,
    /// The business key instead of an id.
    #[arg(long)]
    key: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Only this chain (its root task id).
    #[arg(long, value_name = "ID")]
    root: Option<String>,
    /// Only this correlation id.
    #[arg(long)]
    correlation: Option<String>,
    /// Only the task this business key points at.
    #[arg(long)]
    key: Option<String>,
    /// Only tasks created at or after this time: a duration ago (10m, 2h,
    /// 7d) or an RFC 3339 timestamp (2026-03-01T10:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = humanize::time)]
    since: Option<SystemTime>,
    /// Only tasks created at or before this time (as --since).
    #[arg(long, value_name = "TIME", value_parser = humanize::time)]
    until: Option<SystemTime>,
    /// At most this many tasks.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// The page after this cursor (printed after a full page).
    #[arg(long, value_name = "CURSOR")]
    after: Option<String>,
}

pub(crate) async fn get(context: &Context, args: GetArgs) -> Result<Exit, Failure> {
    let client = context.existing().await?;
    let task = find(&client, args.id.as_deref(), args.key.as_deref()).await?;
    let key = match args.key {
        Some(key) => Some(key),
        None if context.out.format == Format::Table => client.task_key(&task.id).await?,
        None => None,
    };
    let steps = client.steps(&task.id).await?;
    if context.out.format != Format::Table {
        context.out.json(&TaskWithSteps { task: &task, steps: &steps })?;
        return Ok(Exit::Ok);
    }
    let wait = client.task_wait(&task.id).await?;
    context.out.task_keyed(&task, key.as_deref(), wait.as_ref())?;
    if !steps.is_empty() {
        context.out.text(&format!("\n{}", step_table(&steps).render(context.out.colour)))?;
    }
    Ok(Exit::Ok)
}

/// The task with this id or key; exit 3 when there is none.
pub(crate) async fn find(client: &CairnQ, id: Option<&str>, key: Option<&str>) -> Result<Task, Failure> {
    match (id, key) {
        (Some(id), _) => client.get(id).await?.ok_or_else(|| Failure::not_found(format_args!("with id {id}"))),
        (None, Some(key)) => {
            client.get_by_key(key).await?.ok_or_else(|| Failure::not_found(format_args!("with key {key:?}")))
        }
        (None, None) => Err(Failure::usage("give a task id or --key")),
    }
}

pub(crate) async fn list(context: &Context, args: ListArgs) -> Result<Exit, Failure> {
    let filter = filter(&args)?;
    let client = context.existing_checked().await?;
    let page = client.list(&filter).await?;
    // Only a table says how far a waiting task is: JSON is the library's rows.
    let waiting: Vec<String> = page.tasks.iter().filter(|t| is_waiting(t)).map(|t| t.id.clone()).collect();
    let waits = match context.out.format {
        Format::Table if !waiting.is_empty() => client.task_waits(&waiting).await?,
        _ => Vec::new(),
    };
    print_page(context, &page, &waits)
}

fn print_page(context: &Context, page: &cairnq_core::TaskPage, waits: &[TaskWait]) -> Result<Exit, Failure> {
    match context.out.format {
        Format::Json => context.out.json(page)?,
        Format::Jsonl => context.out.tasks(&page.tasks)?,
        Format::Table => {
            context.out.tasks_waiting(&page.tasks, waits)?;
            for bad in &page.undecodable {
                hint(&format!("undecodable row: {bad}"));
            }
        }
    }
    if let (Some(next), false) = (&page.next, context.out.format == Format::Json) {
        hint(&format!("more: --after {next}"));
    }
    Ok(Exit::Ok)
}

/// The list filter of the arguments, refused (exit 2) when malformed.
fn filter(args: &ListArgs) -> Result<ListFilter, Failure> {
    if args.limit == 0 {
        return Err(Failure::usage("--limit must be at least 1"));
    }
    let mut filter = args.filter.list(args.filter.status()).limit(args.limit);
    if let Some(root) = &args.root {
        filter = filter.root_id(root);
    }
    if let Some(correlation) = &args.correlation {
        filter = filter.correlation_id(correlation);
    }
    if let Some(key) = &args.key {
        filter = filter.key(key);
    }
    if let Some(since) = args.since {
        filter = filter.created_since(since);
    }
    if let Some(until) = args.until {
        filter = filter.created_until(until);
    }
    if let (Some(since), Some(until)) = (args.since, args.until)
        && since > until
    {
        return Err(Failure::usage("--until is before --since: no task can match"));
    }
    if let Some(after) = &args.after {
        let cursor: ListCursor = after.parse().map_err(|e| Failure::usage(format!("--after: {e}")))?;
        filter = filter.after(cursor);
    }
    Ok(filter)
}
