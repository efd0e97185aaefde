//! `cairnq wait ID | --key K`: blocks until the task finishes and prints
//! it. The exit code says how it ended: 0 succeeded, 1 failed or canceled,
//! 4 the wait timed out (the task keeps running), 3 no such task.

use std::time::Duration;

use cairnq_core::{TaskStatus, WaitOptions};

use crate::commands::Context;
use crate::commands::read::find;
use crate::exit::{Exit, Failure};
use crate::humanize;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The task id.
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    id: Option<String>,
    /// The business key instead of an id.
    #[arg(long)]
    key: Option<String>,
    /// Give up after this long (exit 4); the task keeps running.
    #[arg(long, default_value = "60s", value_parser = humanize::duration)]
    timeout: Duration,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    let client = context.existing().await?;
    // A typo is reported at once, not after the timeout.
    let task = find(&client, args.id.as_deref(), args.key.as_deref()).await?;
    let options = WaitOptions::new().timeout(args.timeout);
    let done = match &args.key {
        Some(key) => client.wait_by_key(key, &options).await?,
        None => client.wait(&task.id, &options).await?,
    };
    context.out.task(&done)?;
    Ok(if done.status == TaskStatus::Succeeded { Exit::Ok } else { Exit::Failed })
}
