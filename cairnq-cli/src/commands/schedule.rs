//! `cairnq schedule ls|add|pause|resume|trigger|rm`: the schedules in the
//! database (the book's "Schedules" chapter), managed as an application would through
//! `CairnQ`. `add` checks the spec, zone and payload before the database
//! opens, so bad input writes nothing; a name that matches nothing exits 3.
//! `add` is a write like `submit` and, like it, creates and migrates a
//! database where there is none (a schedule needs its table); the others
//! open the database as it is.

use std::time::Duration;

use cairnq_core::{CatchUp, Overlap, Schedule, ScheduleInfo, now_ms};
use serde::Serialize;

use crate::commands::{Context, json_arg};
use crate::exit::{Exit, Failure};
use crate::humanize::{self, relative};
use crate::output::Format;
use crate::table::{Cell, Table, Tone, truncated};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Every schedule: spec, zone, next fire (- while paused), missed slots, state.
    #[command(visible_alias = "list")]
    Ls,
    /// Create a schedule, or update the one with this name. Like submit, a write: it creates
    /// and migrates the database when there is none.
    Add(AddArgs),
    /// Stop a schedule firing.
    Pause(NameArg),
    /// Fire a paused schedule again, from its next slot after now.
    Resume(NameArg),
    /// Fire a schedule once now (paused or not); prints the task.
    Trigger(NameArg),
    /// Delete a schedule (its fired tasks stay); -o json prints {"deleted": NAME}.
    Rm(NameArg),
}

#[derive(Debug, clap::Args)]
struct NameArg {
    /// The schedule's name.
    name: String,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "every"])))]
struct AddArgs {
    /// The schedule's name (unique).
    name: String,
    /// A cron spec ('0 3 * * *', six fields with seconds, @hourly, @daily, ...).
    #[arg(long)]
    cron: Option<String>,
    /// A fixed interval instead (e.g. 30s, 5m): slots are multiples of it since the epoch.
    #[arg(long, value_parser = humanize::duration)]
    every: Option<Duration>,
    /// The task name each fire submits.
    #[arg(long)]
    task: String,
    /// The payload of every fired task, as JSON (default: {}).
    #[arg(long)]
    payload: Option<String>,
    /// The IANA time zone of the cron spec (e.g. Europe/Berlin; default UTC). Not with
    /// --every, whose slots are multiples of the interval since the epoch in any zone.
    #[arg(long, conflicts_with = "every")]
    tz: Option<String>,
    /// The queue of the fired tasks.
    #[arg(long, default_value = "default")]
    queue: String,
    /// After downtime: skip (count the misses), latest (fire once), all (replay the last hour, at most 100).
    #[arg(long, value_enum, default_value_t = CatchUpArg::Latest)]
    catch_up: CatchUpArg,
    /// While the previous fire's task is queued or running: allow, or skip the slot.
    #[arg(long, value_enum, default_value_t = OverlapArg::Allow)]
    overlap: OverlapArg,
    /// Delay each fired task by a random time up to this (e.g. 10s).
    #[arg(long, value_parser = humanize::duration)]
    jitter: Option<Duration>,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Claims allowed before a retryable failure becomes final.
    #[arg(long, default_value_t = 3)]
    max_attempts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CatchUpArg {
    Skip,
    Latest,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OverlapArg {
    Allow,
    Skip,
}

/// A schedule as `-o json` writes it.
#[derive(Serialize)]
struct View<'a> {
    name: &'a str,
    task: &'a str,
    spec: &'a str,
    tz: &'a str,
    queue: &'a str,
    payload: serde_json::Value,
    next_fire_ms: i64,
    last_slot_ms: Option<i64>,
    missed: u64,
    catch_up: &'static str,
    overlap: &'static str,
    jitter_ms: u128,
    paused: bool,
    owner: &'static str,
}

impl<'a> View<'a> {
    fn of(info: &'a ScheduleInfo) -> Self {
        let s = &info.schedule;
        Self {
            name: &s.name,
            task: &s.task,
            spec: s.spec.as_str(),
            tz: s.spec.tz(),
            queue: &s.queue,
            payload: s.payload.to_value().unwrap_or(serde_json::Value::Null),
            next_fire_ms: info.next_fire_ms,
            last_slot_ms: info.last_slot_ms,
            missed: info.missed,
            catch_up: s.catch_up.as_str(),
            overlap: s.overlap.as_str(),
            jitter_ms: s.jitter.as_millis(),
            paused: info.paused,
            owner: info.owner.as_str(),
        }
    }
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    match args.action {
        Action::Ls => {
            let client = context.existing().await?;
            print(context, &client.schedules().await?)?;
        }
        Action::Add(add) => {
            let schedule = schedule(add)?;
            let client = context.installing().await?;
            print(context, &[client.save_schedule(&schedule).await?])?;
        }
        Action::Pause(NameArg { name }) => {
            let found = context.existing().await?.pause_schedule(&name).await?;
            print(context, &[found.ok_or_else(|| not_found(&name))?])?;
        }
        Action::Resume(NameArg { name }) => {
            let found = context.existing().await?.resume_schedule(&name).await?;
            print(context, &[found.ok_or_else(|| not_found(&name))?])?;
        }
        Action::Trigger(NameArg { name }) => {
            let task = context.existing().await?.trigger_schedule(&name).await?.ok_or_else(|| not_found(&name))?;
            match context.out.format {
                Format::Table => context.out.tasks(std::slice::from_ref(&task))?,
                _ => context.out.task(&task)?,
            }
        }
        Action::Rm(NameArg { name }) => {
            if !context.existing().await?.delete_schedule(&name).await? {
                return Err(not_found(&name));
            }
            match context.out.format {
                Format::Table => crate::output::hint(&format!("deleted schedule {name}")),
                _ => context.out.json(&Deleted { deleted: &name })?,
            }
        }
    }
    Ok(Exit::Ok)
}

/// What `schedule rm -o json` prints.
#[derive(Serialize)]
struct Deleted<'a> {
    deleted: &'a str,
}

fn not_found(name: &str) -> Failure {
    Failure::new(Exit::NotFound, format!("no schedule {name}"))
}

/// The schedule `add` saves, checked before anything is opened.
fn schedule(add: AddArgs) -> Result<Schedule, Failure> {
    let base = match (add.cron, add.every) {
        (Some(cron), None) => Schedule::cron(add.name, &cron, add.task)?.tz(add.tz.as_deref().unwrap_or("UTC"))?,
        (None, Some(every)) => Schedule::every(add.name, every, add.task)?,
        _ => return Err(Failure::usage("give exactly one of --cron and --every")),
    };
    let mut schedule = base
        .queue(add.queue)
        .priority(add.priority)
        .max_attempts(add.max_attempts)
        .jitter(add.jitter.unwrap_or_default())
        .catch_up(match add.catch_up {
            CatchUpArg::Skip => CatchUp::Skip,
            CatchUpArg::Latest => CatchUp::Latest,
            CatchUpArg::All => CatchUp::all(),
        })
        .overlap(match add.overlap {
            OverlapArg::Allow => Overlap::Allow,
            OverlapArg::Skip => Overlap::Skip,
        });
    if let Some(payload) = add.payload {
        schedule.payload = json_arg("--payload", payload)?;
    }
    if add.max_attempts == 0 || i32::try_from(add.max_attempts).is_err() {
        return Err(Failure::usage("--max-attempts must be 1 up to 2147483647"));
    }
    Ok(schedule)
}

fn print(context: &Context, schedules: &[ScheduleInfo]) -> Result<(), Failure> {
    context.out.list(&schedules.iter().map(View::of).collect::<Vec<_>>(), || table(schedules))
}

fn table(schedules: &[ScheduleInfo]) -> Table {
    let now = now_ms();
    let mut table = Table::new(vec!["NAME", "SPEC", "TZ", "TASK", "QUEUE", "NEXT", "MISSED", "STATE", "OWNER"]);
    for info in schedules {
        let s = &info.schedule;
        let state = if info.paused { Cell::new("paused", Tone::Dim) } else { Cell::new("active", Tone::Good) };
        table.row(vec![
            s.name.clone().into(),
            truncated(s.spec.as_str(), 30).into(),
            s.spec.tz().to_string().into(),
            s.task.clone().into(),
            s.queue.clone().into(),
            // A paused schedule fires at no time: its stored next slot
            // slides into the past while it waits for a resume.
            if info.paused { Cell::new("-", Tone::Dim) } else { relative(info.next_fire_ms, now).into() },
            info.missed.to_string().into(),
            state,
            info.owner.as_str().into(),
        ]);
    }
    table
}
