//! `cairnq stats [--queue Q] [--watch 2s]`: task counts per queue and
//! status, once or every interval until Ctrl-C. A watch is a stream: as a
//! table, each under a line with the time it was read; as JSON, one
//! compact document per line per interval, so a reader can take each line
//! as it comes.

use std::time::{Duration, SystemTime};

use cairnq_core::{Stats, TaskStatus};

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::humanize;
use crate::output::Format;
use crate::table::{Cell, Table, Tone};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this queue (shown even when empty).
    #[arg(long)]
    queue: Option<String>,
    /// Print again every interval (e.g. 2s) until Ctrl-C. Watching is a stream: with -o json
    /// or jsonl, one compact JSON document per line per interval.
    #[arg(long, value_name = "INTERVAL", value_parser = humanize::duration)]
    watch: Option<Duration>,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    if args.watch.is_some_and(|every| every.is_zero()) {
        return Err(Failure::usage("--watch needs an interval above zero, e.g. 2s"));
    }
    let client = context.existing_checked().await?;
    let Some(every) = args.watch else {
        print(context, &client.stats(args.queue.as_deref()).await?, false)?;
        return Ok(Exit::Ok);
    };
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let stats = client.stats(args.queue.as_deref()).await?;
        if context.out.format == Format::Table {
            // Redraw in place on a terminal; a pipe gets one table after
            // another, each under the time it was read.
            let clear = if context.out.terminal { "\x1b[H\x1b[2J" } else { "" };
            let at = humantime::format_rfc3339_seconds(SystemTime::now());
            context
                .out
                .text(&format!("{clear}at {at} (every {}; Ctrl-C stops)\n", humantime::format_duration(every)))?;
        }
        print(context, &stats, true)?;
        tokio::select! {
            _ = &mut stop => return Ok(Exit::Ok),
            () = tokio::time::sleep(every) => {}
        }
    }
}

fn print(context: &Context, stats: &Stats, watching: bool) -> Result<(), Failure> {
    match context.out.format {
        Format::Table => context.out.text(&stats_table(stats).render(context.out.colour)),
        _ if watching => context.out.json_line(stats),
        _ => context.out.json(stats),
    }
}

/// One row per queue, one column per status (and unrecognized rows, when
/// a foreign writer left any).
pub(crate) fn stats_table(stats: &Stats) -> Table {
    let odd = stats.values().any(|counts| counts.unrecognized > 0);
    let mut header = vec!["QUEUE", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELED"];
    if odd {
        header.push("UNRECOGNIZED");
    }
    let mut table = Table::new(header);
    for (queue, counts) in stats {
        let mut row: Vec<Cell> = vec![queue.clone().into()];
        for status in TaskStatus::ALL {
            let count = counts.get(status);
            let tone = if count > 0 { crate::output::status_tone(status) } else { Tone::Dim };
            row.push(Cell::new(count.to_string(), tone));
        }
        if odd {
            row.push(counts.unrecognized.to_string().into());
        }
        table.row(row);
    }
    table
}
