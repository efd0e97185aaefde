//! `doctor` and `stats --watch`: what an operator runs when a queue
//! misbehaves.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use serde_json::{Value, json};

use crate::support::Fixture;

async fn doctor_reports_expired_leases(fixture: &Fixture) {
    let cli = &fixture.cli;
    let healthy = cli.json(&["-o", "json", "doctor"]);
    assert_eq!(healthy["problems"], json!([]), "{healthy}");
    assert_eq!(healthy["protocol_version"], json!({"database": "1", "sdk": "1"}));
    assert_eq!(healthy["schema_version"]["last_shared_migration"], "0010_drop_status_index.sql");
    assert_eq!(healthy["schema_version"]["database"], "10");
    assert_eq!(healthy["migrations_pending"], json!([]));
    let ledger = healthy["ledger"].as_array().expect("the ledger");
    let status = cli.json(&["-o", "json", "migrate", "status"]);
    assert_eq!(ledger, status.as_array().expect("status"), "the whole ledger, names and times");
    let extensions: Vec<&str> =
        healthy["extensions"].as_array().expect("extensions").iter().filter_map(Value::as_str).collect();
    assert!(!extensions.is_empty() && extensions.iter().all(|name| name.starts_with("ext_")), "{extensions:?}");
    let table = cli.run(&["doctor"]).stdout;
    assert!(table.contains("schema version    0010_drop_status_index.sql (cairnq_meta: 10)"), "{table}");
    // Ranges of consecutive ordinals, the last entry named: a dialect may
    // skip an ordinal another dialect's own migration took.
    let last_extension = &extensions.last().expect("an extension")["ext_".len()..][..4];
    let ledger_line = table.lines().find(|line| line.starts_with("ledger")).expect("a ledger line");
    assert!(ledger_line.contains("ext_0001.."), "the ledger in compact form: {table}");
    assert!(ledger_line.contains(&format!("{last_extension} (last ")), "the last extension named: {table}");

    let task = fixture.client.submit("stuck", &json!({})).await.expect("submit");
    let gone = fixture.client.worker_session("worker_gone", std::time::Duration::from_millis(1)).expect("a session");
    let claimed = gone.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(1)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let ran = cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "a problem found exits 1: {}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert_eq!(report["expired_leases"], json!([task.id]), "{report}");
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

/// Moves a task's creation and due time `ago` into the past, as if it
/// had waited that long.
fn age(path: &str, id: &str, ago: Duration) {
    let ms = i64::try_from(ago.as_millis()).expect("ms");
    let conn = cairnq_sqlite::rusqlite::Connection::open(path).expect("open");
    let sql = "update cairnq_tasks set created_at_ms = created_at_ms - ?1, run_at_ms = run_at_ms - ?1 where id = ?2";
    assert_eq!(conn.execute(sql, cairnq_sqlite::rusqlite::params![ms, id]).expect("age"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_finds_the_oldest_due_task_and_names_no_worker_claims() {
    let fixture = Fixture::sqlite().await;
    let client = &fixture.client;
    let orphan = client.submit("orphan", &json!({})).queue("lonely").await.expect("submit");
    // A name a worker serves: one of its tasks finished just now.
    let done = client.submit("served", &json!({})).await.expect("submit");
    fixture.succeed(&done).await;
    let waiting = client.submit("served", &json!({})).await.expect("submit");
    let later =
        client.submit("orphan", &json!({})).queue("lonely").delay(Duration::from_secs(3600)).await.expect("submit");
    age(&fixture.cli.db, &orphan.id, Duration::from_secs(2 * 3600));
    age(&fixture.cli.db, &waiting.id, Duration::from_secs(3600));

    let ran = fixture.cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "a problem found exits 1: {}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert_eq!(report["oldest_due"]["id"], json!(orphan.id), "{report}");
    assert!(report["oldest_due"]["waited_ms"].as_i64().is_some_and(|ms| ms >= 2 * 3_600_000), "{report}");
    let unclaimed = report["unclaimed_names"].as_array().expect("unclaimed");
    assert_eq!(unclaimed.len(), 1, "only the name nothing ran lately (the delayed task is not due): {report}");
    assert_eq!((unclaimed[0]["name"].clone(), unclaimed[0]["queue"].clone()), (json!("orphan"), json!("lonely")));
    assert_eq!(unclaimed[0]["waiting"], 1, "{} is not due yet", later.id);
    assert!(report["problems"].to_string().contains(r#"\"orphan\" on queue \"lonely\""#), "{report}");
    let table = fixture.cli.run(&["doctor"]).stdout;
    assert!(table.contains(&format!("oldest due        {} (orphan on lonely), waited 2h", orphan.id)), "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_reports_a_database_of_another_protocol_version() {
    let fixture = Fixture::sqlite().await;
    fixture.client.submit("any", &json!({})).await.expect("submit");
    let conn = cairnq_sqlite::rusqlite::Connection::open(&fixture.cli.db).expect("open");
    conn.execute("update cairnq_meta set value = '2' where key = 'protocol_version'", []).expect("update");

    let ran = fixture.cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert_eq!(report["protocol_version"], json!({"database": "2", "sdk": "1"}));
    assert!(report["problems"].to_string().contains("protocol version 2, this SDK speaks 1"), "{report}");
    assert!(report.get("expired_leases").is_none(), "its tasks are not read: {report}");
    assert_eq!(report["sqlite"]["integrity"], "ok", "the file is still checked");
    assert!(fixture.cli.run(&["doctor"]).stdout.contains("protocol version  2 (this SDK: 1)"));
    fixture.cli.run(&["list"]).refused(1, "protocol");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_on_postgres() {
    // A database of its own: the test server's other schemas would be
    // (rightly) reported as more than one installation.
    let (fixture, database) = Fixture::postgres_database().await;
    let report = fixture.cli.json(&["-o", "json", "doctor"]);
    assert_eq!(report["postgres_installations"], json!(["public"]), "{report}");
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
    assert_eq!(first, json!({}));
    fixture.client.submit("later", &json!({})).await.expect("submit");
    let seen = lines.take(100).any(|line| {
        let stats: Value = serde_json::from_str(&line.expect("read")).expect("JSON");
        stats["default"]["queued"] == 1
    });
    assert!(seen, "a later line shows the new task");
    child.kill().expect("stop");
    child.wait().expect("reap");
}
