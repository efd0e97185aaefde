//! The flags of the task commands, each run through the binary on a
//! SQLite file and checked against what the library reads back: payload
//! files, chains (--parent, --root, --correlation), key conflicts, bulk
//! dry runs, by-key cancel / retry / wait, purge limits, payloads cut in
//! tables and whole in JSON, and the exit codes in --help.

use std::process::Stdio;

use cairnq_core::TaskStatus;
use serde_json::{Value, json};

use crate::support::{Fixture, Ran, path_text};

fn id(task: &Value) -> String {
    task["id"].as_str().unwrap_or_else(|| panic!("no id in {task}")).to_string()
}

fn ids(listed: &Value) -> Vec<String> {
    let mut all: Vec<String> = listed["tasks"].as_array().expect("tasks").iter().map(id).collect();
    all.sort_unstable();
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payload_file_is_read_and_a_missing_one_refused() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("payload.json");
    std::fs::write(&file, "{\"from\": \"file\", \"n\": [1, 2.5, 12345678901234567890]}\n").expect("write");
    let cli = &fixture.cli;
    let task = cli.json(&["-o", "json", "submit", "load", "--payload-file", &path_text(&file)]);
    let stored = fixture.client.get(&id(&task)).await.expect("get").expect("stored");
    assert_eq!(stored.payload.as_str(), r#"{"from": "file", "n": [1, 2.5, 12345678901234567890]}"#);

    let before = fixture.client.stats(None).await.expect("stats");
    let missing = path_text(&dir.path().join("nope.json"));
    cli.run(&["submit", "load", "--payload-file", &missing]).refused(2, "cannot read --payload-file");
    std::fs::write(&file, "{not json").expect("write");
    cli.run(&["submit", "load", "--payload-file", &path_text(&file)]).refused(2, "--payload-file is not valid JSON");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "nothing was submitted");
}

#[tokio::test(flavor = "multi_thread")]
async fn parent_and_correlation_make_chains_that_list_finds() {
    let fixture = Fixture::sqlite().await;
    let cli = &fixture.cli;
    let root = cli.json(&["-o", "json", "submit", "order", "--correlation", "req-7"]);
    let child = cli.json(&["-o", "json", "submit", "charge", "--parent", &id(&root)]);
    let grandchild = cli.json(&["-o", "json", "submit", "email", "--parent", &id(&child), "--correlation", "mail-1"]);
    let stranger = cli.json(&["-o", "json", "submit", "order", "--correlation", "req-8"]);

    let stored = fixture.client.get(&id(&grandchild)).await.expect("get").expect("stored");
    assert_eq!(stored.parent_id.as_deref(), Some(id(&child).as_str()));
    assert_eq!(stored.root_id.as_deref(), Some(id(&root).as_str()), "the chain's root, through the parent");
    assert_eq!(stored.correlation_id.as_deref(), Some("mail-1"), "--correlation wins over the parent's");
    assert_eq!(child["correlation_id"], "req-7", "the parent's correlation id is inherited");

    let mut chain = vec![id(&root), id(&child), id(&grandchild)];
    chain.sort_unstable();
    assert_eq!(ids(&cli.json(&["-o", "json", "list", "--root", &id(&root)])), chain);
    let mut correlated = vec![id(&root), id(&child)];
    correlated.sort_unstable();
    assert_eq!(ids(&cli.json(&["-o", "json", "list", "--correlation", "req-7"])), correlated);
    assert_eq!(ids(&cli.json(&["-o", "json", "list", "--correlation", "req-8"])), vec![id(&stranger)]);

    let before = fixture.client.stats(None).await.expect("stats");
    cli.run(&["submit", "orphan", "--parent", "task_nope"]).refused(3, "no task with id task_nope");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn reuse_succeeded_and_replace_resolve_key_conflicts() {
    let fixture = Fixture::sqlite().await;
    let cli = &fixture.cli;
    let first = cli.json(&["-o", "json", "submit", "report", "--key", "daily"]);
    let task = fixture.client.get(&id(&first)).await.expect("get").expect("stored");
    fixture.succeed(&task).await;
    let again = cli.json(&["-o", "json", "submit", "report", "--key", "daily", "--conflict", "reuse-succeeded"]);
    assert_eq!(id(&again), id(&first), "a succeeded task is reused");
    let fresh = cli.json(&["-o", "json", "submit", "report", "--key", "daily", "--conflict", "reuse"]);
    assert_ne!(id(&fresh), id(&first), "plain reuse takes live tasks only");

    let replaced = cli.json(&["-o", "json", "submit", "report", "--key", "daily", "--conflict", "replace"]);
    assert_ne!(id(&replaced), id(&fresh));
    let old = fixture.client.get(&id(&fresh)).await.expect("get").expect("kept");
    assert_eq!(old.status, TaskStatus::Canceled, "replace cancels the live task");
    assert_eq!(cli.json(&["-o", "json", "get", "--key", "daily"])["id"], json!(id(&replaced)));
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_and_retry_by_key_and_dry_runs_change_nothing() {
    let fixture = Fixture::sqlite().await;
    let cli = &fixture.cli;
    for n in 0..3 {
        cli.json(&["-o", "json", "submit", "resize", "--queue", "images", "--payload", &n.to_string()]);
    }
    let keyed = cli.json(&["-o", "json", "submit", "resize", "--queue", "video", "--key", "clip-1"]);
    let before = fixture.client.stats(None).await.expect("stats");

    let dry = cli.json(&["-o", "json", "cancel", "--queue", "images", "--dry-run"]);
    assert_eq!((dry["count"].clone(), dry["action"].clone()), (json!(3), json!("cancel")), "{dry}");
    let dry_key = cli.json(&["-o", "json", "cancel", "--key", "clip-1", "--dry-run"]);
    assert_eq!(dry_key["tasks"][0]["id"], json!(id(&keyed)), "{dry_key}");
    let table = cli.run(&["cancel", "--queue", "images", "--dry-run"]);
    assert_eq!(table.stdout.lines().count(), 4, "a header and the three tasks: {}", table.stdout);
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "dry runs changed nothing");

    let canceled = cli.json(&["-o", "json", "cancel", "--key", "clip-1"]);
    assert_eq!(canceled[0]["status"], "canceled");
    let retried = cli.json(&["-o", "json", "retry", "--key", "clip-1"]);
    assert_eq!((retried[0]["id"].clone(), retried[0]["status"].clone()), (json!(id(&keyed)), json!("queued")));
    cli.run(&["retry", "--key", "clip-1"]).refused(1, "is queued: nothing to retry");
    cli.run(&["cancel", "--key", "nope"]).refused(3, "no task with key");
    assert_eq!(fixture.client.stats(Some("images")).await.expect("stats")["images"].queued, 3);
}

/// `wait` as a child process, so the test can finish the task meanwhile.
fn wait_in_background(fixture: &Fixture, args: &[&str]) -> std::process::Child {
    let mut all = vec!["-o", "json", "wait", "--timeout", "60s"];
    all.extend_from_slice(args);
    fixture.cli.command(&all).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start wait")
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_by_id_or_key_exits_0_when_the_task_succeeds() {
    let fixture = Fixture::sqlite().await;
    let by_key = fixture.client.submit("render", &json!({})).key("frame-1").await.expect("submit");
    let by_id = fixture.client.submit("encode", &json!({})).await.expect("submit");
    let waits = [wait_in_background(&fixture, &["--key", "frame-1"]), wait_in_background(&fixture, &[&by_id.id])];
    // Whether a wait already polls or has yet to read the task, it ends
    // when the task has succeeded.
    fixture.succeed(&by_key).await;
    fixture.succeed(&by_id).await;
    for (wait, task) in waits.into_iter().zip([&by_key, &by_id]) {
        let done = Ran::from(wait.wait_with_output().expect("wait")).json();
        assert_eq!((done["id"].clone(), done["status"].clone()), (json!(task.id), json!("succeeded")));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_stops_at_its_limit() {
    let fixture = Fixture::sqlite().await;
    let mut tasks = Vec::new();
    for n in 0..3 {
        tasks.push(fixture.client.submit("old", &json!(n)).await.expect("submit"));
    }
    fixture.succeed(&tasks[0]).await;
    assert_eq!(fixture.client.stats(None).await.expect("stats")["default"].succeeded, 3);
    let cli = &fixture.cli;
    cli.run(&["purge", "--older-than", "0s", "--limit", "0"]).refused(2, "--limit must be at least 1");
    assert_eq!(cli.json(&["-o", "json", "purge", "--older-than", "0s", "--limit", "2", "--yes"]), json!({"purged": 2}));
    assert_eq!(fixture.client.stats(None).await.expect("stats")["default"].succeeded, 1);
    assert_eq!(cli.run(&["purge", "--older-than", "0s", "--limit", "5", "--yes"]).stdout, "purged 1 task(s)\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_cut_payloads_short_and_json_keeps_them_whole() {
    let fixture = Fixture::sqlite().await;
    let long = format!(r#"{{"text": "{}", "end": "the last words"}}"#, "word ".repeat(200));
    let cli = &fixture.cli;
    // Submitted through the binary: the payload is stored as written, its last words last.
    let task = fixture.client.get(&id(&cli.json(&["-o", "json", "submit", "essay", "--payload", &long]))).await;
    let task = task.expect("get").expect("stored");
    let table = cli.run(&["list"]).stdout;
    let row = table.lines().find(|line| line.contains(&task.id)).expect("the task's row");
    assert!(row.contains('…') && !row.contains("the last words"), "{row}");
    let detail = cli.run(&["get", &task.id]).stdout;
    assert!(detail.contains('…') && !detail.contains("the last words"), "{detail}");
    let listed = cli.json(&["-o", "json", "list"]);
    assert_eq!(listed["tasks"][0]["payload"]["end"], "the last words");
    assert_eq!(
        cli.json(&["-o", "json", "get", &task.id])["payload"],
        serde_json::from_str::<Value>(&long).expect("JSON")
    );
}

#[test]
fn help_lists_every_exit_code() {
    let help = std::process::Command::new(crate::support::binary()).arg("--help").output().expect("run");
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for line in ["  0  done", "  1  failed", "  2  usage", "  3  not found", "  4  timeout"] {
        assert!(text.lines().any(|l| l.starts_with(line)), "--help does not list {line:?}:\n{text}");
    }
}
