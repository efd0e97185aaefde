//! `cairnq purge --older-than 7d`: deletes finished tasks in batches (the
//! library's purge, at most [`BATCH`] rows per transaction, so a large purge
//! never holds the write lock for long), with a progress bar on a terminal.
//! What it would delete is read first (the library's `purgeable`, by the
//! purge's own rule) for the confirm/preview rule every destructive command
//! shares ([`confirm`]).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use cairnq_core::{CairnQ, PurgeFilter, Task, TaskStatus};
use serde::Serialize;

use crate::commands::Context;
use crate::commands::confirm::{self, CAP, Guard};
use crate::commands::filter::FilterArgs;
use crate::exit::{Exit, Failure};
use crate::humanize;
use crate::output::{Format, hint};

#[derive(Debug, clap::Args)]
#[command(after_help = confirm::RULE)]
pub(crate) struct Args {
    /// Only tasks finished more than this long ago (e.g. 7d, 12h).
    #[arg(long, value_parser = humanize::duration)]
    older_than: Duration,
    // --status must be a finished one: succeeded, failed or canceled.
    #[command(flatten)]
    filter: FilterArgs,
    /// Delete at most this many tasks.
    #[arg(long)]
    limit: Option<u32>,
    #[command(flatten)]
    guard: Guard,
}

/// Rows per purge transaction.
const BATCH: u32 = 1000;

#[derive(Serialize)]
struct Purged {
    purged: u64,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    let filter = args.filter.purge(PurgeFilter::new().older_than(args.older_than));
    if args.limit == Some(0) {
        return Err(Failure::usage("--limit must be at least 1"));
    }
    // A non-terminal status is refused here, before the database opens.
    filter.validate()?;
    let client = context.existing().await?;
    let mut limit = args.limit;
    if args.guard.dry_run || !args.guard.yes {
        let (doomed, capped) = purgeable(&client, &filter, args.limit).await?;
        if args.guard.dry_run {
            return confirm::preview(context, "purge", &doomed, capped);
        }
        if !doomed.is_empty() {
            confirm::confirm(&args.guard, "delete", doomed.len(), capped).await?;
        }
        if !capped {
            // Only what was shown: nothing that aged past the cutoff while
            // a person read the question.
            limit = u32::try_from(doomed.len()).ok().map(|n| limit.map_or(n, |l| l.min(n)));
        }
    }
    if limit == Some(0) {
        return print_purged(context, 0);
    }
    let mut bar = Bar::new(&client, &filter, limit).await?;
    let mut purged: u64 = 0;
    loop {
        let left = limit.map_or(BATCH, |limit| BATCH.min(limit - u32::try_from(purged).unwrap_or(limit)));
        if left == 0 {
            break;
        }
        let deleted = client.purge(&filter.clone().limit(left)).await?.len() as u64;
        purged += deleted;
        bar.show(purged);
        if deleted < u64::from(left) {
            break;
        }
    }
    bar.finish();
    print_purged(context, purged)
}

fn print_purged(context: &Context, purged: u64) -> Result<Exit, Failure> {
    match context.out.format {
        Format::Table => context.out.text(&format!("purged {purged} task(s)\n"))?,
        _ => context.out.json(&Purged { purged })?,
    }
    Ok(Exit::Ok)
}

/// What the purge would delete (up to `limit` and at most [`CAP`]), and
/// whether more than [`CAP`] would go.
async fn purgeable(client: &CairnQ, filter: &PurgeFilter, limit: Option<u32>) -> Result<(Vec<Task>, bool), Failure> {
    let cap = u32::try_from(CAP).unwrap_or(u32::MAX);
    let shown = limit.map_or(cap, |limit| limit.min(cap));
    let mut page = client.purgeable(&filter.clone().limit(shown.saturating_add(1))).await?;
    for bad in &page.undecodable {
        hint(&format!("undecodable row: {bad}"));
    }
    let more = page.tasks.len() > shown as usize;
    page.tasks.truncate(shown as usize);
    Ok((page.tasks, more && shown == cap))
}

/// A progress bar on stderr, shown only when stderr is a terminal. Its
/// total is the finished tasks the filter's queue and status hold (an upper
/// bound: their age is not counted), capped by `--limit`.
struct Bar {
    total: Option<u64>,
}

impl Bar {
    async fn new(client: &CairnQ, filter: &PurgeFilter, limit: Option<u32>) -> Result<Self, Failure> {
        if !std::io::stderr().is_terminal() {
            return Ok(Self { total: None });
        }
        let stats = client.stats(filter.queue.as_deref()).await?;
        let statuses: Vec<TaskStatus> = match filter.status {
            Some(status) => vec![status],
            None => TaskStatus::ALL.into_iter().filter(|s| s.is_terminal()).collect(),
        };
        let finished: u64 = stats.values().map(|counts| statuses.iter().map(|s| counts.get(*s)).sum::<u64>()).sum();
        let total = limit.map_or(finished, |limit| finished.min(u64::from(limit)));
        Ok(Self { total: Some(total.max(1)) })
    }

    fn show(&mut self, done: u64) {
        let Some(total) = self.total else { return };
        const WIDTH: u64 = 30;
        let filled = (done.min(total) * WIDTH / total) as usize;
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH as usize - filled));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\rpurging [{bar}] {done} of at most {total}");
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.total.is_some() {
            hint("");
        }
    }
}
