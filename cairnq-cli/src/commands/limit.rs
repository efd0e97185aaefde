//! `cairnq limit set|ls|rm`: the flow-control limits in the database
//! (the book's "Flow control" chapter), managed as an application would through
//! `CairnQ`. `set` checks the key and numbers before the database opens,
//! so bad input writes nothing; like `submit` it creates and migrates a
//! database where there is none (a limit needs its table). `rm` of a key
//! with no limit exits 3.

use std::time::Duration;

use cairnq_core::{Limit, LimitStatus};
use serde::Serialize;

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::humanize::{self, relative};
use crate::output::Format;
use crate::table::{Cell, Table, Tone};
use cairnq_core::now_ms;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Create or replace the limit on KEY (a task's limit key, or a prefix ending in `*`
    /// that limits each matching key separately). Like submit, a write: it creates and
    /// migrates the database when there is none.
    Set(SetArgs),
    /// Every limit: concurrency, rate, burst, and the tasks running and waiting under it
    /// and when its rate next admits a start.
    Ls,
    /// Remove the limit stored under KEY exactly; -o json prints {"removed": KEY}.
    Rm(KeyArg),
}

#[derive(Debug, clap::Args)]
struct KeyArg {
    /// The limit's key (`tenant:*` for a prefix default).
    key: String,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("bound").required(true).multiple(true).args(["concurrency", "rate"])))]
struct SetArgs {
    /// A task's limit key, or a prefix ending in `*` (e.g. tenant:*).
    key: String,
    /// At most N of the key's tasks running at once.
    #[arg(long, value_name = "N")]
    concurrency: Option<u32>,
    /// At most N starts per duration, e.g. 100/1m, 20/s, 5/500ms (every start counts,
    /// a retry too).
    #[arg(long, value_name = "N/DURATION", value_parser = rate)]
    rate: Option<(u32, Duration)>,
    /// Up to N starts at once after a quiet spell (default 1).
    #[arg(long, value_name = "N", requires = "rate")]
    burst: Option<u32>,
}

/// Parses `--rate N/DURATION` (a bare unit means one of it: `20/s`).
fn rate(text: &str) -> Result<(u32, Duration), String> {
    let how = "write N/DURATION, e.g. 100/1m or 20/s";
    let (count, per) = text.split_once('/').ok_or_else(|| format!("{text:?} is not a rate; {how}"))?;
    let count = count.trim().parse().map_err(|_| format!("{count:?} is not a count of starts; {how}"))?;
    let per = per.trim();
    let per = if per.starts_with(|c: char| c.is_ascii_alphabetic()) { format!("1{per}") } else { per.to_string() };
    Ok((count, humanize::duration(&per)?))
}

/// A limit as `-o json` writes it (`limit ls`, and `doctor`'s limits).
#[derive(Serialize)]
pub(crate) struct View {
    pub(crate) key: String,
    pub(crate) concurrency: Option<u32>,
    pub(crate) rate_count: Option<u32>,
    pub(crate) rate_period_ms: Option<u128>,
    pub(crate) burst: Option<u32>,
    pub(crate) updated_at_ms: i64,
    pub(crate) running: u64,
    pub(crate) waiting: u64,
    pub(crate) keys: u64,
    pub(crate) next_admit_ms: Option<i64>,
}

impl View {
    pub(crate) fn of(status: &LimitStatus) -> Self {
        let l = &status.info.limit;
        Self {
            key: l.key.clone(),
            concurrency: l.concurrency,
            rate_count: l.rate.map(|r| r.count),
            rate_period_ms: l.rate.map(|r| r.period.as_millis()),
            burst: l.burst,
            updated_at_ms: status.info.updated_at_ms,
            running: status.running,
            waiting: status.waiting,
            keys: status.keys,
            next_admit_ms: status.next_admit_ms,
        }
    }
}

/// What `limit rm -o json` prints.
#[derive(Serialize)]
struct Removed<'a> {
    removed: &'a str,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    match args.action {
        Action::Set(set) => {
            let mut limit = Limit::new(set.key);
            limit.concurrency = set.concurrency;
            if let Some((count, period)) = set.rate {
                limit = limit.rate(count, period);
            }
            limit.burst = set.burst;
            limit.validate()?;
            let client = context.installing().await?;
            let set = client.set_limit(&limit).await?;
            let statuses = client.limit_statuses().await?;
            print(context, &statuses.into_iter().filter(|s| s.info.limit.key == set.limit.key).collect::<Vec<_>>())?;
        }
        Action::Ls => print(context, &context.existing().await?.limit_statuses().await?)?,
        Action::Rm(KeyArg { key }) => {
            Limit::validate_key(&key)?;
            if !context.existing().await?.remove_limit(&key).await? {
                return Err(Failure::new(Exit::NotFound, format!("no limit {key}")));
            }
            match context.out.format {
                Format::Table => crate::output::hint(&format!("removed limit {key}")),
                _ => context.out.json(&Removed { removed: &key })?,
            }
        }
    }
    Ok(Exit::Ok)
}

fn print(context: &Context, limits: &[LimitStatus]) -> Result<(), Failure> {
    context.out.list(&limits.iter().map(View::of).collect::<Vec<_>>(), || table(limits))
}

fn table(limits: &[LimitStatus]) -> Table {
    let now = now_ms();
    let none = || Cell::new("-", Tone::Dim);
    let mut table =
        Table::new(vec!["KEY", "CONCURRENCY", "RATE", "BURST", "RUNNING", "WAITING", "NEXT START", "UPDATED"]);
    for status in limits {
        let (info, l) = (&status.info, &status.info.limit);
        let rate = l.rate.map(|r| {
            let period = humanize::short(u64::try_from(r.period.as_millis()).unwrap_or(u64::MAX));
            format!("{}/{period}", r.count)
        });
        table.row(vec![
            l.key.clone().into(),
            l.concurrency.map_or_else(none, |c| c.to_string().into()),
            rate.map_or_else(none, Into::into),
            l.burst.map_or_else(none, |b| b.to_string().into()),
            status.running.to_string().into(),
            status.waiting.to_string().into(),
            status.next_admit_ms.map_or_else(none, |at| relative(at, now).into()),
            relative(info.updated_at_ms, now).into(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_or_without_a_number_of_units() {
        assert_eq!(rate("100/1m"), Ok((100, Duration::from_secs(60))));
        assert_eq!(rate("20/s"), Ok((20, Duration::from_secs(1))));
        assert_eq!(rate(" 5 / 500ms "), Ok((5, Duration::from_millis(500))));
        assert!(rate("100").expect_err("no period").contains("N/DURATION"));
        assert!(rate("x/1s").expect_err("no count").contains("count"));
        assert!(rate("1/soon").is_err());
    }
}
