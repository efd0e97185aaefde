//! `cairnq submit NAME`: one task, with every option a library submit has.
//! The payload and metadata are checked as JSON before the database is
//! opened, so bad input writes nothing.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use cairnq_core::{CairnQ, Conflict, DependencyFailure, Json, SubmitOptions, TaskSpec};

use crate::commands::read::find;
use crate::commands::{Context, json_arg};
use crate::exit::{Exit, Failure};
use crate::humanize;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The handler name.
    name: String,
    /// The payload as JSON, or `-` to read it from stdin (default: null).
    #[arg(long, conflicts_with = "payload_file")]
    payload: Option<String>,
    /// Read the payload JSON from this file.
    #[arg(long, value_name = "FILE")]
    payload_file: Option<PathBuf>,
    /// Business key: at most one live task per key.
    #[arg(long)]
    key: Option<String>,
    /// What to do when the key already has a task.
    #[arg(long, value_enum, default_value_t = ConflictArg::Reuse, requires = "key")]
    conflict: ConflictArg,
    /// The queue.
    #[arg(long, default_value = "default")]
    queue: String,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Not claimable before this long from now (e.g. 30s, 10m).
    #[arg(long, value_parser = humanize::duration)]
    delay: Option<Duration>,
    /// Claims allowed before a retryable failure becomes final.
    #[arg(long, default_value_t = 3)]
    max_attempts: u32,
    /// Caller metadata, a JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// The submitting task's id: the new task joins its chain (its root, and its correlation
    /// id unless --correlation is given), as a handler's child submit does. It must exist.
    #[arg(long, value_name = "ID")]
    parent: Option<String>,
    /// A correlation id tying related tasks together.
    #[arg(long)]
    correlation: Option<String>,
    /// Flow-control key (written to the metadata as limit_key): the limits set with
    /// `cairnq limit` for it apply (e.g. tenant:42).
    #[arg(long, value_name = "KEY")]
    limit_key: Option<String>,
    /// Wait until this task has ended (repeat for several): the new task is not claimed
    /// before every one of them has. Each must exist.
    #[arg(long = "after", value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    after: Vec<String>,
    /// What a dependency ending failed or canceled does: cancel this task (the default)
    /// or run it anyway once all have ended.
    #[arg(long, value_enum, requires = "after", value_name = "POLICY")]
    on_dependency_failure: Option<DependencyFailureArg>,
}

/// `--on-dependency-failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DependencyFailureArg {
    Cancel,
    Run,
}

/// `--conflict`, as every SDK spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ConflictArg {
    Reuse,
    ReuseSucceeded,
    Reject,
    Replace,
}

impl From<ConflictArg> for Conflict {
    fn from(arg: ConflictArg) -> Self {
        match arg {
            ConflictArg::Reuse => Conflict::Reuse,
            ConflictArg::ReuseSucceeded => Conflict::ReuseSucceeded,
            ConflictArg::Reject => Conflict::Reject,
            ConflictArg::Replace => Conflict::Replace,
        }
    }
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    let payload = payload(args.payload, args.payload_file)?;
    let mut options = SubmitOptions::new()
        .queue(args.queue)
        .priority(args.priority)
        .max_attempts(args.max_attempts)
        .delay(args.delay.unwrap_or_default())
        .conflict(args.conflict.into());
    if let Some(key) = args.key {
        options = options.key(key);
    }
    if let Some(metadata) = args.metadata {
        let metadata = json_arg("--metadata", metadata)?;
        if !metadata.is_object() {
            return Err(Failure::usage("--metadata must be a JSON object"));
        }
        options = options.metadata(metadata);
    }
    if let Some(correlation) = args.correlation {
        options = options.correlation_id(correlation);
    }
    if let Some(limit_key) = args.limit_key {
        options = options.limit_key(limit_key);
    }
    let waits = !args.after.is_empty();
    options = options.after(args.after).on_dependency_failure(match args.on_dependency_failure {
        Some(DependencyFailureArg::Run) => DependencyFailure::Run,
        _ => DependencyFailure::Cancel,
    });
    // Everything the library checks is checked before the database opens.
    options.to_new_task(&args.name, payload.clone())?;
    let client = match &args.parent {
        // A parent must be there already: its database is not created.
        Some(parent) => {
            let client = context.existing().await?;
            options = join_chain(&client, options, parent).await?;
            client
        }
        // Dependencies must be there already: the database is not created.
        None if waits => context.existing().await?,
        None => context.installing().await?,
    };
    let spec = TaskSpec::new(args.name, &payload).options(options);
    let task = client.submit_spec(&spec).await?;
    // One row in a table (`cairnq get` shows every field); the row as JSON.
    match context.out.format {
        crate::output::Format::Table => {
            let waits = if waits { client.task_waits(std::slice::from_ref(&task.id)).await? } else { Vec::new() };
            context.out.tasks_waiting(std::slice::from_ref(&task), &waits)?
        }
        _ => context.out.task(&task)?,
    }
    Ok(Exit::Ok)
}

/// `options` for a child of the task `parent_id`: its parent, root and
/// (unless one is given) correlation id; exit 3 when there is no such task.
async fn join_chain(client: &CairnQ, options: SubmitOptions, parent_id: &str) -> Result<SubmitOptions, Failure> {
    let parent = find(client, Some(parent_id), None).await?;
    Ok(options.child_of(&parent))
}

/// The payload from `--payload JSON`, `--payload -` (stdin) or
/// `--payload-file FILE`; `null` when none is given.
fn payload(inline: Option<String>, file: Option<PathBuf>) -> Result<Json, Failure> {
    let (flag, text) = match (inline, file) {
        (Some(dash), None) if dash == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::usage(format!("cannot read the payload from stdin: {e}")))?;
            ("the payload on stdin", text)
        }
        (Some(text), None) => ("--payload", text),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Failure::usage(format!("cannot read --payload-file {}: {e}", path.display())))?;
            ("--payload-file", text)
        }
        _ => return Ok(Json::null()),
    };
    json_arg(flag, text)
}
