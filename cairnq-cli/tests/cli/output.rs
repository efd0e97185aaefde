//! The output contract of every subcommand: `-o json` prints exactly one
//! JSON document on stdout, `-o jsonl` one per line; a watch is a stream
//! of one compact document per line whatever the format; the commands that
//! print no data (`top`, `worker`, `web`) say in `--help` that -o does not
//! apply to them.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{Cli, Fixture};

/// Runs `args` with `-o json` and `-o jsonl`: one document, or one per line.
fn prints_documents(cli: &Cli, args: &[&str]) {
    let json = cli.run(&[&["-o", "json"], args].concat());
    assert_eq!(json.code, 0, "{args:?}: {}", json.stderr);
    if let Err(e) = serde_json::from_str::<Value>(&json.stdout) {
        panic!("{args:?} -o json is not one JSON document ({e}): {}", json.stdout);
    }
    let lines = cli.run(&[&["-o", "jsonl"], args].concat());
    assert_eq!(lines.code, 0, "{args:?}: {}", lines.stderr);
    // No match is no line at all.
    let whole_lines = lines.stdout.is_empty() || lines.stdout.ends_with('\n');
    assert!(whole_lines && !lines.stdout.contains("\n\n"), "{args:?}: {:?}", lines.stdout);
    for line in lines.stdout.lines() {
        if let Err(e) = serde_json::from_str::<Value>(line) {
            panic!("{args:?} -o jsonl: {line:?} is not a JSON document ({e})");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_command_prints_one_json_document_or_one_per_line() {
    let fixture = Fixture::sqlite().await;
    let client = &fixture.client;
    let queued = client.submit("resize", &json!({"w": 1})).key("k-queued").await.expect("submit");
    let done = client.submit("encode", &json!({})).await.expect("submit");
    fixture.succeed(&done).await;
    let cli = &fixture.cli;
    for args in [
        &["submit", "resize", "--payload", r#"{"w": 2}"#][..],
        &["get", &queued.id],
        &["get", "--key", "k-queued"],
        &["list"],
        &["list", "--limit", "1"],
        &["list", "--status", "failed"],
        &["cancel", "--name", "resize", "--dry-run"],
        &["retry", "--status", "failed", "--dry-run"],
        &["wait", &done.id],
        &["flow", &queued.id],
        &["purge", "--older-than", "7d"],
        &["stats"],
        &["stats", "--queue", "nothing-here"],
        &["migrate"],
        &["migrate", "status"],
        &["migrate", "sql"],
        &["doctor"],
        &["schedule", "add", "nightly", "--cron", "0 3 * * *", "--task", "report"],
        &["schedule", "ls"],
        &["schedule", "pause", "nightly"],
        &["schedule", "resume", "nightly"],
        &["schedule", "trigger", "nightly"],
    ] {
        prints_documents(cli, args);
    }
    // The commands that change what they name: one target per format.
    let targets: Vec<String> = queued_ids(&fixture, 2).await;
    for (format, id) in ["json", "jsonl"].into_iter().zip(&targets) {
        assert_eq!(changed(format, &cli.run(&["-o", format, "cancel", id]).stdout)["status"], "canceled");
        assert_eq!(changed(format, &cli.run(&["-o", format, "retry", id]).stdout)["status"], "queued");
        cli.json(&["-o", "json", "schedule", "add", format, "--every", "1h", "--task", "tick"]);
        let removed = cli.run(&["-o", format, "schedule", "rm", format]);
        assert_eq!(serde_json::from_str::<Value>(&removed.stdout).expect("one document"), json!({"deleted": format}));
    }
    let removed = cli.run(&["schedule", "rm", "nightly"]);
    assert_eq!(
        (removed.stdout.as_str(), removed.stderr.as_str()),
        ("", "deleted schedule nightly\n"),
        "a table prints no data"
    );
}

/// The one task a cancel or retry changed: an array of one (`json`), or
/// one line (`jsonl`).
fn changed(format: &str, stdout: &str) -> Value {
    if format == "jsonl" {
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        return serde_json::from_str(stdout.trim_end()).expect("one line");
    }
    let all: Vec<Value> = serde_json::from_str(stdout).expect("one document");
    assert_eq!(all.len(), 1, "{stdout}");
    all.into_iter().next().unwrap_or_default()
}

/// Ids of `count` new queued tasks.
async fn queued_ids(fixture: &Fixture, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        ids.push(fixture.client.submit("target", &json!(n)).await.expect("submit").id);
    }
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_streams_one_compact_document_per_line_in_either_json_format() {
    let fixture = Fixture::sqlite().await;
    fixture.client.submit("resize", &json!({})).await.expect("submit");
    for format in ["json", "jsonl"] {
        let mut child = fixture
            .cli
            .command(&["-o", format, "stats", "--watch", "100ms"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        for line in lines.take(3) {
            let stats: Value = serde_json::from_str(&line.expect("read")).expect("each line is one document");
            assert_eq!(stats["default"]["queued"], 1, "-o {format}");
        }
        child.kill().expect("stop");
        child.wait().expect("reap");
    }
}

#[test]
fn the_commands_without_data_say_that_o_does_not_apply() {
    for command in ["top", "worker", "web"] {
        let help = std::process::Command::new(crate::support::binary()).args([command, "--help"]).output();
        let text = String::from_utf8_lossy(&help.expect("run").stdout).into_owned();
        assert!(text.contains("-o does not apply"), "{command} --help:\n{text}");
    }
}
