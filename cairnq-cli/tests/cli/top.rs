//! The binary in a real pseudo-terminal (a tmux session): `top` shows a
//! submitted task and `q` quits it; tables are coloured on a terminal
//! only, and never with NO_COLOR.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Fixture, binary};

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

#[tokio::test(flavor = "multi_thread")]
async fn top_shows_a_submitted_task_and_q_quits() {
    let fixture = Fixture::sqlite().await;
    let task = fixture.client.submit("thumbnail_for_top", &serde_json::json!({"path": "a.png"})).queue("images").await;
    let task = task.expect("submit");
    let session = format!("cairnq-top-{}", std::process::id());
    let command = format!("{} --db '{}' top --interval 200ms", binary(), fixture.cli.db);
    tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "40", &command]);
    let _cleanup = Session(session.clone());
    let screen = || tmux(&["capture-pane", "-p", "-t", &session]);
    until("top shows the task", || screen().contains("thumbnail_for_top"));
    let shown = screen();
    assert!(shown.contains(&task.id) && shown.contains("images"), "{shown}");

    // A change shows at the next refresh.
    fixture.client.submit("second_for_top", &serde_json::json!({})).await.expect("submit");
    until("top refreshes", || screen().contains("second_for_top"));

    tmux(&["send-keys", "-t", &session, "q"]);
    until("q quits top", || !running(&session));
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
