//! A damaged SQLite file (garbage written over some of its pages, as a
//! failing disk or a bad copy leaves it): `doctor` reports what is damaged
//! and what to do, `stats` and `list` refuse to answer from the pages they
//! can still read. And the kept task counts, which a salvaged copy gets
//! wrong, are checked against the rows, with the recount that fixes them.

use std::io::{Seek, SeekFrom, Write};
use std::process::Command;

use cairnq_core::{CairnQ, Install, TaskSpec};
use cairnq_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{Value, json};

use crate::support::Fixture;

/// A SQLite file with a few thousand tasks, then garbage over a run of
/// pages in the middle of the file (never the first, which holds the
/// schema), with no process holding it open.
pub(crate) async fn damaged_file() -> (Fixture, Vec<String>) {
    let fixture = Fixture::sqlite().await;
    let pad = "x".repeat(300);
    let specs: Vec<TaskSpec> = (0..3_000).map(|n| TaskSpec::new("resize", &json!({"n": n, "pad": pad}))).collect();
    let ids = fixture.client.submit_many(&specs).await.expect("submit").into_iter().map(|t| t.id).collect();
    fixture.client.close().await.expect("close");
    let conn = cairnq_sqlite::rusqlite::Connection::open(&fixture.cli.db).expect("open");
    conn.execute_batch("pragma wal_checkpoint(truncate)").expect("checkpoint");
    let int = |pragma: &str| conn.query_row(pragma, [], |row| row.get::<_, i64>(0)).expect(pragma);
    let (pages, page_size) = (int("pragma page_count").unsigned_abs(), int("pragma page_size").unsigned_abs());
    drop(conn);
    assert!(pages > 100, "a file of many pages: {pages}");
    let mut file = std::fs::OpenOptions::new().write(true).open(&fixture.cli.db).expect("open the file");
    file.seek(SeekFrom::Start(pages / 2 * page_size)).expect("seek");
    let garbage: Vec<u8> = (0..8 * page_size).map(|i| (i * 7919 % 251) as u8).collect();
    file.write_all(&garbage).expect("write garbage");
    file.sync_all().expect("sync");
    (fixture, ids)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_file_is_reported_and_refused() {
    let (fixture, ids) = damaged_file().await;
    let cli = &fixture.cli;

    let ran = cli.run(&["doctor"]);
    assert_eq!(ran.code, 1, "a damaged file is a problem: {}", ran.stderr);
    assert!(ran.stdout.contains("integrity         DAMAGED in cairnq_tasks"), "{}", ran.stdout);
    let problem = ran.stdout.lines().find(|l| l.contains("the SQLite file is damaged")).expect("the finding");
    for advice in ["restore it from a backup", ".recover |", "-recovered.db doctor`", "its tasks were not checked"] {
        assert!(problem.contains(advice), "{advice:?} missing: {problem}");
    }
    let report: Value = serde_json::from_str(&cli.run(&["-o", "json", "doctor"]).stdout).expect("JSON");
    assert_eq!(report["sqlite"]["damaged_tables"], json!(["cairnq_tasks"]), "{report}");
    assert_ne!(report["sqlite"]["integrity"], "ok");
    assert!(report.get("expired_leases").is_none(), "its tasks are not judged: {report}");
    assert_eq!(report["schema_version"]["database"], "10", "what still reads is reported: {report}");

    for command in [&["stats"][..], &["list"], &["-o", "json", "list", "--limit", "1"]] {
        cli.run(command).refused(1, "is damaged in cairnq_tasks");
    }
    cli.run(&["stats"]).refused(1, "`cairnq doctor` says what to do");

    // A read that reaches a damaged page says the file is damaged, and
    // what can be done, whichever command made it: `get` of a task whose
    // row lies on a damaged page (found through the library, in process).
    let options = SqliteOptions::new().install(Install::Existing);
    let client = CairnQ::new(SqliteStore::open_with(&cli.db, options).await.expect("open"));
    let mut lost = None;
    for id in &ids {
        if client.get(id).await.is_err() {
            lost = Some(id);
            break;
        }
    }
    let lost = lost.expect("some task's row lies on a damaged page");
    let ran = cli.run(&["get", lost]);
    ran.refused(1, "is damaged");
    assert!(ran.stderr.contains(".recover") && ran.stderr.contains("restore it from a backup"), "{}", ran.stderr);
}

/// `doctor` finds the kept task counts equal to the rows.
fn assert_counts_agree(fixture: &Fixture) {
    let report = fixture.cli.run(&["doctor"]).stdout;
    assert!(report.contains("task counts       agree with the rows"), "{report}");
}

/// The counter table off by three (a hand edit here; a salvaged copy in
/// life): the doctor says so, and the recount it prints, run as printed,
/// makes the counts right again, and the triggers keep them right as the
/// task moves on from the rebuilt table.
async fn miscounts_are_found_and_the_printed_recount_fixes_them(fixture: &Fixture) {
    let task = fixture.client.submit("resize", &json!({})).await.expect("submit");
    assert_counts_agree(fixture);
    fixture.raw_sql("update cairnq_ext_task_counts set n = n + 3 where queue = 'default' and status = 'queued'").await;
    assert_eq!(fixture.cli.json(&["-o", "json", "stats"])["default"]["queued"], 4, "stats reads the counters");

    let report: Value = serde_json::from_str(&fixture.cli.run(&["-o", "json", "doctor"]).stdout).expect("JSON");
    let miscount = json!([{"queue": "default", "status": "queued", "counted": 4, "rows": 1}]);
    assert_eq!(report["miscounts"], miscount, "{report}");
    let problems = report["problems"].as_array().expect("problems");
    let problem = problems.iter().filter_map(Value::as_str).find(|p| p.contains("counts disagree")).expect("found");
    let remedy = problem.rsplit_once("recount them with `").expect("a command").1.trim_end_matches('`');
    if fixture.cli.db.starts_with("postgres") {
        // The same statements psql would run, in the same session setup.
        let sql = remedy.split_once("-c \"").expect("psql -c").1.trim_end_matches('"');
        fixture.raw_sql(sql).await;
    } else {
        let ran = Command::new("sh").args(["-c", remedy]).output().expect("run sqlite3");
        assert!(ran.status.success(), "{remedy}: {}", String::from_utf8_lossy(&ran.stderr));
    }
    assert_eq!(fixture.cli.json(&["-o", "json", "stats"])["default"]["queued"], 1);
    assert_counts_agree(fixture);

    fixture.client.cancel(&task.id).await.expect("cancel").expect("the task");
    let stats = fixture.cli.json(&["-o", "json", "stats"]);
    assert_eq!(
        (stats["default"]["queued"].as_u64(), stats["default"]["canceled"].as_u64()),
        (Some(0), Some(1)),
        "{stats}"
    );
    assert_counts_agree(fixture);
}

#[tokio::test(flavor = "multi_thread")]
async fn miscounts_on_sqlite() {
    miscounts_are_found_and_the_printed_recount_fixes_them(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn miscounts_on_postgres() {
    miscounts_are_found_and_the_printed_recount_fixes_them(&Fixture::postgres().await).await;
}
