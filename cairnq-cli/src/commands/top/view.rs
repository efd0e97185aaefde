//! Drawing one [`Snapshot`]: a title line, then the queues, the running
//! tasks and the recent failures, each a bordered table. Failures show
//! the error's message (not the envelope's JSON); worker ids too long for
//! their column are cut in the middle so distinct ones stay distinct.

use cairnq_core::TaskStatus;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Row, Table};

use crate::commands::top::{Snapshot, abbrev};
use crate::humanize::{relative, short};
use crate::table::truncated;

/// The narrowest the worker column gets.
const WORKER_MIN: usize = 10;

/// Draws the snapshot; `colour` off (NO_COLOR) leaves every cell plain.
pub(crate) fn draw(frame: &mut Frame<'_>, title: &str, snapshot: &Snapshot, colour: bool) {
    let queue_rows = u16::try_from(snapshot.queues.len()).unwrap_or(u16::MAX).saturating_add(3).min(12);
    let [head, queues, running, latest, failures] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(queue_rows),
        Constraint::Fill(2),
        Constraint::Fill(1),
        Constraint::Fill(1),
    ])
    .areas(frame.area());
    let bold = Style::default().add_modifier(Modifier::BOLD);
    frame.render_widget(Line::styled(format!("cairnq top — {title} — q quits"), bold), head);
    frame.render_widget(queue_table(snapshot, colour), queues);
    frame.render_widget(running_table(snapshot, running.width), running);
    frame.render_widget(latest_table(snapshot, colour), latest);
    frame.render_widget(failure_table(snapshot, colour), failures);
}

fn latest_table(snapshot: &Snapshot, colour: bool) -> Table<'static> {
    let rows = snapshot.latest.iter().map(|task| {
        let tone = match task.status {
            TaskStatus::Queued => tint(colour, Color::Cyan),
            TaskStatus::Running => tint(colour, Color::Yellow),
            TaskStatus::Succeeded => tint(colour, Color::Green),
            TaskStatus::Failed => tint(colour, Color::Red),
            TaskStatus::Canceled => Style::default(),
        };
        Row::new(vec![
            Cell::from(task.id.clone()),
            Cell::from(task.name.clone()),
            Cell::from(task.queue.clone()),
            Cell::from(task.status.as_str()).style(tone),
            Cell::from(relative(task.created_at_ms, snapshot.now_ms)),
            Cell::from(truncated(task.payload.as_str(), 60)),
        ])
    });
    let widths = [
        Constraint::Length(32),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Length(10),
        Constraint::Length(9),
        Constraint::Fill(3),
    ];
    Table::new(rows, widths)
        .header(header(&["ID", "NAME", "QUEUE", "STATUS", "CREATED", "PAYLOAD"]))
        .block(Block::bordered().title(" latest submitted "))
}

/// A foreground colour, or none when colour is off.
fn tint(colour: bool, color: Color) -> Style {
    if colour { Style::default().fg(color) } else { Style::default() }
}

fn header(cells: &[&'static str]) -> Row<'static> {
    Row::new(cells.iter().copied()).style(Style::default().add_modifier(Modifier::BOLD | Modifier::DIM))
}

fn queue_table(snapshot: &Snapshot, colour: bool) -> Table<'static> {
    let rows = snapshot.queues.iter().map(|q| {
        Row::new(vec![
            Cell::from(q.name.clone()),
            Cell::from(q.counts.queued.to_string()).style(tint(colour, Color::Cyan)),
            Cell::from(q.counts.running.to_string()).style(tint(colour, Color::Yellow)),
            Cell::from(q.counts.succeeded.to_string()).style(tint(colour, Color::Green)),
            Cell::from(q.counts.failed.to_string()).style(tint(colour, Color::Red)),
            Cell::from(q.counts.canceled.to_string()),
            Cell::from(q.finished_per_s.map_or("-".into(), |r| format!("{r:.1}/s"))),
            Cell::from(
                q.waited.map_or("-".into(), |waited| short(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX))),
            ),
        ])
    });
    let widths = [
        Constraint::Fill(2),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
    ];
    Table::new(rows, widths)
        .header(header(&["QUEUE", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELED", "FINISHING", "WAITED"]))
        .block(Block::bordered().title(" queues "))
}

/// The running tasks. The worker column gets a third of the room the
/// fixed columns leave (at least [`WORKER_MIN`]); ids longer than that are
/// cut in the middle, keeping the tail that tells them apart.
fn running_table(snapshot: &Snapshot, area_width: u16) -> Table<'static> {
    let workers: Vec<&str> = snapshot.running.iter().map(|t| t.worker_id.as_deref().unwrap_or("")).collect();
    let longest = workers.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    // Borders, the fixed columns (ID, PROG, UPDATED) and six column gaps.
    let flexible = usize::from(area_width).saturating_sub(2 + 32 + 5 + 9 + 6);
    let worker_width = (flexible / 3).max(WORKER_MIN).min(longest.max("WORKER".len()));
    let workers = abbrev::distinct(&workers, worker_width);
    let rows = snapshot.running.iter().zip(workers).map(|(task, worker)| {
        Row::new(vec![
            task.id.clone(),
            task.name.clone(),
            task.queue.clone(),
            task.progress.map_or("-".into(), |p| format!("{:>3.0}%", p * 100.0)),
            truncated(task.message.as_deref().unwrap_or(""), 30),
            worker,
            relative(task.updated_at_ms, snapshot.now_ms),
        ])
    });
    let widths = [
        Constraint::Length(32),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Length(5),
        Constraint::Fill(2),
        Constraint::Length(u16::try_from(worker_width).unwrap_or(u16::MAX)),
        Constraint::Length(9),
    ];
    Table::new(rows, widths)
        .header(header(&["ID", "NAME", "QUEUE", "PROG", "MESSAGE", "WORKER", "UPDATED"]))
        .block(Block::bordered().title(format!(" running ({}) ", snapshot.running.len())))
}

fn failure_table(snapshot: &Snapshot, colour: bool) -> Table<'static> {
    let rows = snapshot.failures.iter().map(|task| {
        let error = task.error_message().map(|message| truncated(&message, 200)).unwrap_or_default();
        Row::new(vec![
            Cell::from(task.id.clone()),
            Cell::from(task.name.clone()),
            Cell::from(relative(task.completed_at_ms.unwrap_or(task.updated_at_ms), snapshot.now_ms)),
            Cell::from(error).style(tint(colour, Color::Red)),
        ])
    });
    let widths = [Constraint::Length(32), Constraint::Fill(1), Constraint::Length(9), Constraint::Fill(4)];
    Table::new(rows, widths)
        .header(header(&["ID", "NAME", "FAILED", "ERROR"]))
        .block(Block::bordered().title(" recent failures "))
}
