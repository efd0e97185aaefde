//! The small things an operator reads at 3 a.m.: `get` shows the key a
//! task is known by, each `stats --watch` refresh says when it was read, a
//! paused schedule shows no next fire in the past, `schedule list` is
//! `schedule ls`, and a bad `--status` names the valid ones.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use cairnq_core::{TaskStatus, now_ms};
use serde_json::json;

use crate::support::Fixture;

const VALID: &str = "valid values: queued, running, succeeded, failed, canceled";

/// The value of a `get` table's row, if it has one.
fn row<'a>(table: &'a str, field: &str) -> Option<&'a str> {
    table.lines().find_map(|line| {
        let (name, value) = line.split_once("  ")?;
        (name.trim() == field).then(|| value.trim())
    })
}

async fn an_operator_reads_keys_times_paused_schedules_and_valid_statuses(fixture: &Fixture) {
    let cli = &fixture.cli;
    let keyed = fixture.client.submit("resize", &json!({})).key("resize:a.png").await.expect("submit");
    let plain = fixture.client.submit("resize", &json!({})).await.expect("submit");
    let by_id = cli.run(&["get", &keyed.id]).stdout;
    assert_eq!(row(&by_id, "key"), Some("resize:a.png"), "{by_id}");
    assert_eq!(row(&cli.run(&["get", "--key", "resize:a.png"]).stdout, "key"), Some("resize:a.png"));
    let unkeyed = cli.run(&["get", &plain.id]).stdout;
    assert_eq!(row(&unkeyed, "id"), Some(plain.id.as_str()), "{unkeyed}");
    assert_eq!(row(&unkeyed, "key"), None, "no key, no row: {unkeyed}");

    // Two refreshes, each under the time it was read.
    let mut watch = cli.command(&["stats", "--watch", "100ms"]).stdout(Stdio::piped()).spawn().expect("watch");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let mut stamps = Vec::new();
    while stamps.len() < 2 {
        let line = lines.next().expect("the watch keeps printing").expect("read");
        if let Some(rest) = line.strip_prefix("at ") {
            let stamp = rest.split_whitespace().next().expect("a time");
            stamps.push(humantime::parse_rfc3339(stamp).unwrap_or_else(|e| panic!("{line:?}: {e}")));
            assert!(line.ends_with("(every 100ms; Ctrl-C stops)"), "{line:?}");
        }
    }
    watch.kill().expect("stop the watch");
    let _ = watch.wait();
    let age = SystemTime::now().duration_since(stamps[0]).unwrap_or_default();
    assert!(age < Duration::from_secs(600) && stamps[1] >= stamps[0], "the times of the reads: {stamps:?}");

    cli.json(&["-o", "json", "schedule", "add", "tick", "--every", "1s", "--task", "tick"]);
    cli.json(&["-o", "json", "schedule", "add", "nightly", "--cron", "0 3 * * *", "--task", "report"]);
    cli.json(&["-o", "json", "schedule", "pause", "tick"]);
    // Paused, its stored next slot passes.
    for _ in 0..100 {
        let tick = fixture.client.schedule("tick").await.expect("read").expect("tick");
        if tick.next_fire_ms < now_ms() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let table = cli.run(&["schedule", "ls"]).stdout;
    let header = table.lines().next().expect("a header");
    let (start, end) = (header.find("NEXT").expect("NEXT"), header.find("MISSED").expect("MISSED"));
    let next_of = |name: &str| {
        let line = table.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {table}"));
        line[start..end].trim().to_string()
    };
    assert_eq!(next_of("tick"), "-", "paused: no next fire, none in the past: {table}");
    assert!(next_of("nightly").starts_with("in "), "an active schedule's next fire: {table}");
    assert_eq!(cli.run(&["schedule", "list"]).stdout, table, "schedule list is schedule ls");
    assert_eq!(cli.json(&["-o", "json", "schedule", "list"]), cli.json(&["-o", "json", "schedule", "ls"]));

    for args in [
        &["list", "--status", "bogus"][..],
        &["cancel", "--status", "bogus"],
        &["retry", "--status", "bogus"],
        &["purge", "--older-than", "1d", "--status", "bogus"],
    ] {
        cli.run(args).refused(2, VALID);
    }
    let parsed = "bogus".parse::<TaskStatus>().expect_err("not a status").to_string();
    assert!(parsed.contains("valid: queued, running, succeeded, failed, canceled"), "the library's own: {parsed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_reads_keys_times_paused_schedules_and_valid_statuses_on_sqlite() {
    an_operator_reads_keys_times_paused_schedules_and_valid_statuses(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_reads_keys_times_paused_schedules_and_valid_statuses_on_postgres() {
    an_operator_reads_keys_times_paused_schedules_and_valid_statuses(&Fixture::postgres().await).await;
}
