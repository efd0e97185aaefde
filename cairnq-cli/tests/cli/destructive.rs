//! One confirm/preview rule for every destructive command (`cancel`,
//! `retry`, `purge`): `--dry-run` lists the tasks that would be affected
//! and changes nothing, `--yes` goes ahead, a run off a terminal without
//! `--yes` is refused (exit 2), and a terminal is asked (through `script`,
//! which gives the binary a pseudo-terminal).

use std::process::{Command, Stdio};

use cairnq_core::{Task, TaskStatus};
use serde_json::{Value, json};

use crate::support::{Fixture, Ran, binary};

/// Two queued resize tasks on `images`, one failed and two succeeded
/// `report` tasks on `reports`.
async fn seed(fixture: &Fixture) -> (Vec<Task>, Task, Vec<Task>) {
    let submit = |name: &'static str, queue: &'static str| async move {
        fixture.client.submit(name, &json!({})).queue(queue).await.expect("submit")
    };
    let queued = vec![submit("resize", "images").await, submit("resize", "images").await];
    let failed = submit("report", "reports").await;
    fixture.fail(&failed).await;
    let done = vec![submit("report", "reports").await, submit("report", "reports").await];
    // One claim takes (and settles) both.
    fixture.succeed(&done[0]).await;
    (queued, failed, done)
}

/// The preview's table rows and its JSON tasks name exactly `tasks`, each
/// with its id, name, queue and status.
fn previews(fixture: &Fixture, args: &[&str], action: &str, tasks: &[&Task], status: TaskStatus) {
    let table = fixture.cli.run(args);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let mut lines = table.stdout.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(header, ["ID", "NAME", "QUEUE", "STATUS"], "{}", table.stdout);
    let mut rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    rows.sort_unstable();
    let mut expected: Vec<Vec<&str>> =
        tasks.iter().map(|t| vec![t.id.as_str(), t.name.as_str(), t.queue.as_str(), status.as_str()]).collect();
    expected.sort_unstable();
    assert_eq!(rows, expected, "the table lists the tasks, not a count");
    assert!(table.stderr.contains("nothing was changed"), "{}", table.stderr);

    let json = fixture.cli.json(&[&["-o", "json"][..], args].concat());
    assert_eq!(
        (&json["dry_run"], &json["action"], &json["count"]),
        (&json!(true), &json!(action), &json!(tasks.len()))
    );
    let mut listed: Vec<Value> = json["tasks"].as_array().expect("tasks").clone();
    listed.sort_by_key(|t| t["id"].as_str().map(String::from));
    let mut wanted: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"id": t.id, "name": t.name, "queue": t.queue, "status": status.as_str()}))
        .collect();
    wanted.sort_by_key(|t| t["id"].as_str().map(String::from));
    assert_eq!(listed, wanted);
}

/// Runs the binary on a pseudo-terminal (`script`), typing `answer`.
fn on_a_terminal(fixture: &Fixture, args: &str, answer: &str) -> Option<Ran> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to give the binary a terminal");
        return None;
    }
    let schema = fixture.cli.schema.as_deref().map_or(String::new(), |s| format!("--schema {s} "));
    let line = format!("{} {schema}{args}", binary());
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("CAIRNQ_DB", &fixture.cli.db)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(answer.as_bytes()).expect("type the answer");
    Some(Ran::from(child.wait_with_output().expect("wait")))
}

async fn every_destructive_command_previews_and_asks_before_it_changes_anything(fixture: &Fixture) {
    let (queued, failed, done) = seed(fixture).await;
    let cli = &fixture.cli;
    let before = fixture.client.stats(None).await.expect("stats");

    previews(fixture, &["cancel", "--queue", "images", "--dry-run"], "cancel", &[&queued[0], &queued[1]], {
        TaskStatus::Queued
    });
    previews(fixture, &["retry", "--queue", "reports", "--dry-run"], "retry", &[&failed], TaskStatus::Failed);
    let finished = [&done[0], &done[1]];
    previews(fixture, &["purge", "--older-than", "0s", "--status", "succeeded", "--dry-run"], "purge", &finished, {
        TaskStatus::Succeeded
    });
    previews(fixture, &["cancel", &queued[0].id, "--dry-run"], "cancel", &[&queued[0]], TaskStatus::Queued);
    // --dry-run wins over --yes.
    assert_eq!(cli.run(&["purge", "--older-than", "0s", "--dry-run", "--yes"]).code, 0);
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "previews change nothing");

    cli.run(&["cancel", "--queue", "images"]).refused(2, "2 tasks match: pass --yes to cancel them");
    cli.run(&["retry", "--queue", "reports"]).refused(2, "1 task matches: pass --yes to retry them");
    cli.run(&["purge", "--older-than", "0s"]).refused(2, "3 tasks match: pass --yes to delete them");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "refused off a terminal without --yes");

    if let Some(declined) = on_a_terminal(fixture, "purge --older-than 0s", "n\n") {
        assert_eq!(declined.code, 1, "{declined:?}");
        assert!(declined.stdout.contains("3 tasks match: delete them? [y/N]"), "{declined:?}");
        assert!(declined.stdout.contains("not confirmed: nothing was changed"), "{declined:?}");
        assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "a no changes nothing");
        let agreed = on_a_terminal(fixture, "purge --older-than 0s --status succeeded", "y\n").expect("a terminal");
        assert_eq!(agreed.code, 0, "{agreed:?}");
        assert!(agreed.stdout.contains("purged 2 task(s)"), "{agreed:?}");
    } else {
        assert_eq!(
            cli.json(&["-o", "json", "purge", "--older-than", "0s", "--status", "succeeded", "--yes"])["purged"],
            2
        );
    }
    assert!(fixture.client.get(&done[0].id).await.expect("get").is_none(), "purged");

    let canceled = cli.json(&["-o", "json", "cancel", "--queue", "images", "--yes"]);
    assert_eq!(canceled.as_array().map(Vec::len), Some(2), "{canceled}");
    let retried = cli.json(&["-o", "json", "retry", "--queue", "reports", "--yes"]);
    assert_eq!(retried[0]["id"], failed.id.as_str(), "{retried}");
    let nothing = cli.json(&["-o", "json", "purge", "--older-than", "0s", "--status", "failed"]);
    assert_eq!(nothing["purged"], 0, "nothing matches: nothing to confirm");

    for command in ["cancel", "retry", "purge"] {
        let help = cli.run(&[command, "--help"]).stdout;
        for says in ["Confirmation:", "--dry-run", "--yes", "exit 2"] {
            assert!(help.contains(says), "{command} --help says {says:?}: {help}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_destructive_command_previews_and_asks_before_it_changes_anything_on_sqlite() {
    every_destructive_command_previews_and_asks_before_it_changes_anything(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_destructive_command_previews_and_asks_before_it_changes_anything_on_postgres() {
    every_destructive_command_previews_and_asks_before_it_changes_anything(&Fixture::postgres().await).await;
}
