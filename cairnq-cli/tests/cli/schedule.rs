//! `cairnq schedule`: add (cron with a zone, every), ls in every format,
//! pause, trigger, resume, rm, and the refusals (bad spec, zone or payload,
//! a zone for an interval: exit 2, nothing written; an unknown name: exit
//! 3), on both backends; add creates a database as submit does.

use serde_json::{Value, json};

use crate::support::Fixture;

async fn schedules_through_the_binary(fixture: &Fixture) {
    let cli = &fixture.cli;
    let added = cli.json(&[
        "-o",
        "json",
        "schedule",
        "add",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Berlin",
        "--task",
        "report",
        "--payload",
        r#"{"kind":"daily"}"#,
        "--queue",
        "reports",
        "--catch-up",
        "skip",
        "--overlap",
        "skip",
    ]);
    let nightly = &added[0];
    assert_eq!((nightly["spec"].clone(), nightly["tz"].clone()), (json!("0 3 * * *"), json!("Europe/Berlin")));
    assert_eq!((nightly["catch_up"].clone(), nightly["overlap"].clone()), (json!("skip"), json!("skip")));
    assert_eq!((nightly["payload"].clone(), nightly["owner"].clone()), (json!({"kind": "daily"}), json!("api")));
    cli.json(&["-o", "json", "schedule", "add", "tick", "--every", "30s", "--task", "tick"]);

    let listed = cli.json(&["-o", "json", "schedule", "ls"]);
    let names: Vec<&str> = listed.as_array().expect("array").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["nightly", "tick"]);
    let lines = cli.run(&["-o", "jsonl", "schedule", "ls"]);
    assert_eq!(lines.stdout.lines().count(), 2, "{}", lines.stdout);
    let table = cli.run(&["schedule", "ls"]);
    assert!(table.stdout.contains("Europe/Berlin") && table.stdout.contains("active"), "{}", table.stdout);

    assert_eq!(cli.json(&["-o", "json", "schedule", "pause", "nightly"])[0]["paused"], json!(true));
    let task = cli.json(&["-o", "json", "schedule", "trigger", "nightly"]);
    assert_eq!((task["name"].clone(), task["queue"].clone()), (json!("report"), json!("reports")));
    assert_eq!(task["metadata"]["schedule"], json!("nightly"));
    let key = format!("schedule:nightly:{}", task["metadata"]["schedule_slot_ms"]);
    let by_key = fixture.client.get_by_key(&key).await.expect("read").expect("keyed");
    assert_eq!(Value::String(by_key.id), task["id"]);
    assert_eq!(cli.json(&["-o", "json", "schedule", "resume", "nightly"])[0]["paused"], json!(false));
    assert_eq!(cli.run(&["schedule", "rm", "tick"]).code, 0);

    cli.run(&["schedule", "rm", "tick"]).refused(3, "no schedule tick");
    cli.run(&["schedule", "pause", "nope"]).refused(3, "no schedule nope");
    cli.run(&["schedule", "trigger", "nope"]).refused(3, "no schedule nope");
    for (args, says) in [
        (vec!["--cron", "61 * * * *"], "spec"),
        (vec!["--cron", "0 3 * * *", "--tz", "Mars/Olympus"], "tz"),
        (vec!["--every", "30s", "--payload", "{nope"], "--payload"),
        (vec!["--every", "30s", "--max-attempts", "0"], "max-attempts"),
        (vec!["--every", "30s", "--tz", "Europe/Berlin"], "cannot be used with '--tz"),
    ] {
        let mut all = vec!["schedule", "add", "bad", "--task", "x"];
        all.extend(args);
        cli.run(&all).refused(2, says);
    }
    assert!(fixture.client.schedule("bad").await.expect("read").is_none(), "a refused add wrote nothing");
    assert_eq!(cli.run(&["schedule", "add", "bad", "--task", "x"]).code, 2, "--cron or --every is required");
}

#[tokio::test(flavor = "multi_thread")]
async fn schedule_commands_on_sqlite() {
    schedules_through_the_binary(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn schedule_commands_on_postgres() {
    schedules_through_the_binary(&Fixture::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn schedule_add_creates_a_database_as_submit_does_and_ls_does_not() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("new.db");
    let cli = crate::support::Cli { db: crate::support::path_text(&path), schema: None };
    cli.run(&["schedule", "ls"]).refused(1, "no such file");
    assert!(!path.exists(), "ls only looks");
    cli.json(&["-o", "json", "schedule", "add", "tick", "--every", "1m", "--task", "tick"]);
    let status = cli.json(&["-o", "json", "migrate", "status"]);
    assert!(status.as_array().is_some_and(|all| all.iter().all(|m| m["applied_at_ms"].is_i64())), "{status}");
    assert_eq!(cli.json(&["-o", "json", "schedule", "ls"])[0]["name"], "tick");
}
