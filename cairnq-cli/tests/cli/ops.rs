//! `doctor` and `stats --watch`: what an operator runs when a queue
//! misbehaves.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use cairnq_core::store::{ClaimDraw, ClaimParams};
use serde_json::Value;

use crate::support::Fixture;

async fn doctor_reports_expired_leases(fixture: &Fixture) {
    let cli = &fixture.cli;
    let healthy = cli.json(&["-o", "json", "doctor"]);
    assert_eq!(healthy["problems"], serde_json::json!([]), "{healthy}");
    assert_eq!(healthy["protocol_version"], 1);
    assert_eq!(healthy["migrations_pending"], serde_json::json!([]));

    let task = fixture.client.submit("stuck", &serde_json::json!({})).await.expect("submit");
    let claim = ClaimParams::new("worker_gone", 1).draw(ClaimDraw::new(vec!["default".into()]).limit(1));
    assert_eq!(fixture.client.claim(&claim).await.expect("claim").len(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let ran = cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "a problem found exits 1: {}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert_eq!(report["expired_leases"], serde_json::json!([task.id]), "{report}");
    let table = cli.run(&["doctor"]);
    assert!(table.stdout.contains("expired leases    1") && table.stdout.contains("problem:"), "{}", table.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_on_sqlite() {
    let fixture = Fixture::sqlite().await;
    let report = fixture.cli.json(&["-o", "json", "doctor"]);
    assert_eq!(report["sqlite"]["integrity"], "ok");
    assert_eq!(report["sqlite"]["journal_mode"], "wal");
    doctor_reports_expired_leases(&fixture).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_on_postgres() {
    // A database of its own: the test server's other schemas would be
    // (rightly) reported as more than one installation.
    let (fixture, database) = Fixture::postgres_database().await;
    let report = fixture.cli.json(&["-o", "json", "doctor"]);
    assert_eq!(report["postgres_installations"], serde_json::json!(["public"]), "{report}");
    doctor_reports_expired_leases(&fixture).await;
    fixture.drop_database(&database).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_reports_several_postgres_installations() {
    let first = Fixture::postgres().await;
    let second = Fixture::postgres().await;
    let ran = first.cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    let schemas = report["postgres_installations"].as_array().expect("schemas");
    for schema in [&first.cli.schema, &second.cli.schema] {
        assert!(schemas.contains(&Value::from(schema.clone().expect("schema"))), "{report}");
    }
    assert!(report["problems"].to_string().contains("schemas"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_watch_prints_a_line_per_interval_with_changes() {
    let fixture = Fixture::sqlite().await;
    let mut child = fixture
        .cli
        .command(&["-o", "jsonl", "stats", "--watch", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first: Value = serde_json::from_str(&lines.next().expect("a line").expect("read")).expect("JSON");
    assert_eq!(first, serde_json::json!({}));
    fixture.client.submit("later", &serde_json::json!({})).await.expect("submit");
    let seen = lines.take(100).any(|line| {
        let stats: Value = serde_json::from_str(&line.expect("read")).expect("JSON");
        stats["default"]["queued"] == 1
    });
    assert!(seen, "a later line shows the new task");
    child.kill().expect("stop");
    child.wait().expect("reap");
}
