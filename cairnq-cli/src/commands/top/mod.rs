//! `cairnq top`: a live view of the queues (depth, rates, how long the
//! oldest due task has waited: a delayed one is not waiting yet), the
//! running tasks (progress, worker) and recent failures,
//! refreshed every interval until `q`, Esc or Ctrl-C. Built on ratatui
//! with its crossterm backend, so it runs in any terminal, over ssh too.
//!
//! Keys are read on a thread of their own (crossterm's read blocks) and
//! handed over a channel; the database is read on the async runtime.

mod abbrev;
mod snapshot;
mod view;

use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc;

use crate::commands::Context;
use crate::exit::{Exit, Failure};
use crate::humanize;

pub(crate) use snapshot::Snapshot;

#[derive(Debug, clap::Args)]
#[command(after_help = "-o does not apply: top draws on the terminal. For data, `stats --watch 2s -o jsonl` \
                        prints one JSON document per line per interval.")]
pub(crate) struct Args {
    /// How often to refresh.
    #[arg(long, default_value = "1s", value_parser = humanize::duration)]
    interval: Duration,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    if args.interval < Duration::from_millis(100) {
        return Err(Failure::usage("--interval must be at least 100ms"));
    }
    let target = context.target()?;
    let client = context.existing().await?;
    let title = match &target {
        crate::db::Target::Sqlite(path) => format!("sqlite {}", path.display()),
        crate::db::Target::Postgres { schema, .. } => {
            format!("postgres{}", schema.as_deref().map(|s| format!(" schema {s}")).unwrap_or_default())
        }
    };
    let mut terminal =
        ratatui::try_init().map_err(|e| Failure::new(Exit::Failed, format!("cannot start the terminal UI: {e}")))?;
    let keys = key_reader();
    let outcome = watch(&mut terminal, &client, &title, args.interval, keys).await;
    ratatui::restore();
    outcome.map(|()| Exit::Ok)
}

async fn watch(
    terminal: &mut ratatui::DefaultTerminal,
    client: &cairnq_core::CairnQ,
    title: &str,
    every: Duration,
    mut keys: mpsc::UnboundedReceiver<Key>,
) -> Result<(), Failure> {
    let mut previous: Option<Snapshot> = None;
    loop {
        let snapshot = Snapshot::take(client, previous.as_ref()).await?;
        terminal
            .draw(|frame| view::draw(frame, title, &snapshot, crate::output::colour_allowed()))
            .map_err(|e| Failure::new(Exit::Failed, format!("cannot draw: {e}")))?;
        previous = Some(snapshot);
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            key = keys.recv() => match key {
                Some(Key::Quit) | None => return Ok(()),
                Some(Key::Redraw) => {}
            },
        }
    }
}

/// What a key press asks for.
enum Key {
    Quit,
    Redraw,
}

/// Reads terminal events on a thread of its own (they block) until the
/// receiver is gone.
fn key_reader() -> mpsc::UnboundedReceiver<Key> {
    let (send, receive) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        loop {
            let key = match event::read() {
                Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => match key.code {
                    KeyCode::Char('q') | KeyCode::Esc => Key::Quit,
                    KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Key::Quit,
                    _ => continue,
                },
                Ok(Event::Resize(..)) => Key::Redraw,
                Ok(_) => continue,
                Err(_) => Key::Quit,
            };
            if send.send(key).is_err() {
                return;
            }
        }
    });
    receive
}
