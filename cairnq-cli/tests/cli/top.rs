//! The binary in a real pseudo-terminal (a tmux session): `top` shows a
//! submitted task and `q` quits it; at 80 and 160 columns its queue ages
//! count from when a task became due, worker ids stay distinct and
//! failures show their message; tables are coloured on a terminal only,
//! and never with NO_COLOR.

use std::process::Command;
use std::time::{Duration, Instant};

use cairnq_core::ErrorEnvelope;
use cairnq_core::store::ClaimDraw;

use crate::support::{Fixture, binary};
use crate::waiting::Scene;

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("run tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn running(session: &str) -> bool {
    Command::new("tmux").args(["has-session", "-t", session]).output().is_ok_and(|o| o.status.success())
}

/// Ends the tmux session however the test ends.
struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        if running(&self.0) {
            tmux(&["kill-session", "-t", &self.0]);
        }
    }
}

/// Waits until `probe` holds, up to 20 s.
fn until(what: &str, mut probe: impl FnMut() -> bool) {
    let start = Instant::now();
    while !probe() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `cairnq top` in a tmux window `width` columns wide (40 lines), ended
/// when dropped.
struct Top(Session);

impl Top {
    fn start(db: &str, tag: &str, width: u16) -> Self {
        let session = format!("cairnq-top-{tag}-{width}-{}", std::process::id());
        let command = format!("{} --db '{db}' top --interval 200ms", binary());
        tmux(&["new-session", "-d", "-s", &session, "-x", &width.to_string(), "-y", "40", &command]);
        Self(Session(session))
    }

    fn screen(&self) -> String {
        tmux(&["capture-pane", "-p", "-t", &self.0.0])
    }

    /// The screen once `probe` holds for it (up to 20 s).
    fn showing(&self, what: &str, probe: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if probe(&screen) {
                return screen;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting until {what}:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The task rows of the table titled `title`.
fn section<'a>(screen: &'a str, title: &str) -> Vec<&'a str> {
    let lines = screen.lines().skip_while(|line| !line.starts_with(&format!("┌ {title}")));
    lines.take_while(|line| !line.starts_with('└')).filter(|line| line.contains("task_")).collect()
}

/// The cells of the queue table's row for `queue` (the other tables'
/// rows carry task ids).
fn queue_row<'a>(screen: &'a str, queue: &str) -> Vec<&'a str> {
    let cells = |line: &'a str| line.split(|c: char| c.is_whitespace() || c == '│').filter(|c| !c.is_empty());
    let row = screen.lines().find(|line| !line.contains("task_") && cells(line).next() == Some(queue));
    cells(row.unwrap_or_else(|| panic!("no row for queue {queue}: {screen}"))).collect()
}

/// Saves a screen as the book's picture of `top` (`cargo xtask docs`
/// takes it into `docs/src/images/top.txt`, so every test run regenerates
/// it): the trailing blank lines of the pane cut.
fn keep_for_the_book(screen: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tui-screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshot dir");
    let text: Vec<&str> = screen.trim_end().lines().map(str::trim_end).collect();
    std::fs::write(dir.join("top.txt"), text.join("\n") + "\n").expect("the screenshot is saved");
}

#[tokio::test(flavor = "multi_thread")]
async fn top_shows_a_submitted_task_and_q_quits() {
    let fixture = Fixture::sqlite().await;
    let task = fixture.client.submit("thumbnail_for_top", &serde_json::json!({"path": "a.png"})).queue("images").await;
    let task = task.expect("submit");
    let top = Top::start(&fixture.cli.db, "task", 160);
    let shown = top.showing("top shows the task", |screen| screen.contains("thumbnail_for_top"));
    assert!(shown.contains(&task.id) && shown.contains("images"), "{shown}");

    // A change shows at the next refresh.
    fixture.client.submit("second_for_top", &serde_json::json!({})).await.expect("submit");
    top.showing("top refreshes", |screen| screen.contains("second_for_top"));

    let session = &top.0.0;
    tmux(&["send-keys", "-t", session, "q"]);
    until("q quits top", || !running(session));
}

/// A queue whose only task is delayed shows no wait (not the time since it
/// was submitted); the others their oldest due task's wait since it became
/// due, at 80 columns as at 160.
#[tokio::test(flavor = "multi_thread")]
async fn top_shows_how_long_the_oldest_due_task_waited() {
    let fixture = Fixture::sqlite().await;
    Scene::set_up(&fixture).await;
    for width in [80, 160] {
        let top = Top::start(&fixture.cli.db, "waited", width);
        let screen = top.showing("the queues", |s| ["later", "lonely", "early"].iter().all(|q| s.contains(q)));
        assert!(screen.contains("WAITED"), "{screen}");
        let waited = |queue: &str| queue_row(&screen, queue).last().map(|cell| cell.to_string());
        assert_eq!(waited("later").as_deref(), Some("-"), "due in 42m: not waiting at {width} columns: {screen}");
        assert_eq!(waited("lonely").as_deref(), Some("1h"), "due 1h ago, created 2h ago: {screen}");
        assert_eq!(waited("early").as_deref(), Some("2h"), "{screen}");
    }
}

/// Two workers whose generated ids differ only at the end each hold a
/// task, and a task failed with an error envelope: at 80 columns the
/// worker ids are cut in the middle and stay distinct; at 160 they show
/// whole; the failure shows its message, not the envelope's JSON.
#[tokio::test(flavor = "multi_thread")]
async fn top_keeps_worker_ids_distinct_and_shows_error_messages() {
    let fixture = Fixture::sqlite().await;
    let workers = ["worker_01M8Z7S8EP336X8DCAKG7BK9QG", "worker_01M8Z7S8EP336X8DCAKG7BK9QH"];
    for worker in workers {
        fixture.client.submit("render", &serde_json::json!({})).await.expect("submit");
        let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["render".into()]).limit(1);
        let session = fixture.client.worker_session(worker, std::time::Duration::from_secs(600)).expect("a session");
        let claimed = session.claim(vec![draw], vec![]).await.expect("claim");
        assert_eq!(claimed.len(), 1);
    }
    let doomed = fixture.client.submit("upload", &serde_json::json!({})).await.expect("submit");
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["upload".into()]).limit(1);
    let up = fixture.client.worker_session("worker_up", std::time::Duration::from_secs(600)).expect("a session");
    up.claim(vec![draw], vec![]).await.expect("claim");
    let envelope = ErrorEnvelope::new("disk_full", "no space left on the spool");
    up.fail(&doomed.id, envelope.to_json(), None).await.expect("fail");

    for width in [80, 160] {
        let top = Top::start(&fixture.cli.db, "workers", width);
        let screen = top.showing("the running tasks and the failure", |s| {
            section(s, "running").len() == 2 && section(s, "recent failures").len() == 1
        });
        let running = section(&screen, "running");
        let tails: Vec<&str> = workers.iter().map(|w| &w[w.len() - 6..]).collect();
        for tail in &tails {
            assert_eq!(running.iter().filter(|l| l.contains(tail)).count(), 1, "{tail} in one row: {screen}");
        }
        if width == 80 {
            assert!(
                running.iter().all(|l| l.contains('…') && !l.contains(workers[0]) && !l.contains(workers[1])),
                "{screen}"
            );
        } else {
            assert!(workers.iter().all(|w| screen.contains(w)), "whole at {width} columns: {screen}");
        }
        if width == 80 {
            keep_for_the_book(&screen);
        }
        let failure = section(&screen, "recent failures")[0];
        assert!(failure.contains(&doomed.id), "{screen}");
        assert!(failure.contains("no space left on"), "the message at {width} columns: {screen}");
        assert!(!screen.contains("disk_full") && !screen.contains("\"code\""), "no JSON: {screen}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn colour_only_on_a_terminal_and_never_with_no_color() {
    let fixture = Fixture::sqlite().await;
    let task = fixture.client.submit("paint", &serde_json::json!({})).await.expect("submit");
    // A pipe: no escape codes, even without NO_COLOR.
    let piped = Command::new(binary()).args(["--db", &fixture.cli.db, "list"]).env_remove("NO_COLOR").output();
    let piped = String::from_utf8_lossy(&piped.expect("run").stdout).into_owned();
    assert!(piped.contains(&task.id) && !piped.contains('\x1b'), "{piped:?}");

    for (env, coloured) in [("", true), ("NO_COLOR=1 ", false)] {
        let session = format!("cairnq-colour-{}-{coloured}", std::process::id());
        let command = format!("env -u NO_COLOR {env}{} --db '{}' list; sleep 30", binary(), fixture.cli.db);
        tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "10", &command]);
        let _cleanup = Session(session.clone());
        let screen = || tmux(&["capture-pane", "-p", "-e", "-t", &session]);
        until("the table is shown", || screen().contains(&task.id));
        let shown = screen();
        assert_eq!(shown.contains("\x1b[36m"), coloured, "{env:?}: {shown:?}");
    }
}
