//! The `cairnq-conformance` binary as a user runs it: scenario files from a
//! directory anywhere on disk, one line per scenario, a summary line, and an
//! exit code that says whether everything passed.

use std::path::Path;
use std::process::{Command, Output};

const PASSING: &str = r#"{"name": "submit_then_get", "steps": [
    {"op": "submit", "args": {"name": "job"}, "save": "t"},
    {"op": "get", "args": {"id": "$t.id"}, "expect": {"equals": {"status": "queued"}}}
]}"#;

const FAILING: &str = r#"{"name": "claim_from_empty_queue", "steps": [
    {"op": "claim", "args": {"worker_id": "w1"}, "expect": {"length": 1}}
]}"#;

fn conformance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cairnq-conformance")).args(args).output().expect("the binary runs")
}

fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect()
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).expect("writable temp dir");
}

#[test]
fn a_directory_of_scenarios_prints_one_line_each_and_fails_on_any_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "a_pass.json", PASSING);
    write(dir.path(), "b_fail.json", FAILING);
    write(dir.path(), "notes.txt", "not a scenario");
    let output = conformance(&["--backend", "sqlite", dir.path().to_str().expect("UTF-8 temp path")]);
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0], "PASS submit_then_get");
    assert_eq!(lines[1], "FAIL claim_from_empty_queue: steps[0] (claim): length: expected 1, actual 0 in []");
    assert_eq!(lines[2], "1 passed, 1 failed");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn passing_files_exit_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "ok.json", PASSING);
    let file = dir.path().join("ok.json");
    let output = conformance(&[file.to_str().expect("UTF-8 temp path")]);
    assert_eq!(stdout_lines(&output), ["PASS submit_then_get", "1 passed, 0 failed"]);
    assert!(output.status.success());
}

#[test]
fn the_memory_backend_runs_scenarios_and_reports_them_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "a_pass.json", PASSING);
    write(dir.path(), "b_fail.json", FAILING);
    let output = conformance(&["--backend", "memory", dir.path().to_str().expect("UTF-8 temp path")]);
    let lines = stdout_lines(&output);
    assert_eq!(lines.first().map(String::as_str), Some("PASS submit_then_get"), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("1 passed, 1 failed"), "{lines:?}");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn an_unreadable_file_is_a_failure_not_a_skip() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "broken.json", "{ not json");
    let output = conformance(&[dir.path().to_str().expect("UTF-8 temp path")]);
    let lines = stdout_lines(&output);
    assert!(lines[0].starts_with("FAIL ") && lines[0].contains("broken.json: not a scenario file"), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("0 passed, 1 failed"));
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn postgres_runs_scenarios_on_the_test_server_and_unknown_backends_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "pg_submit.json", PASSING);
    let dsn = cairnq_testkit::postgres::test_dsn().expect("a Postgres test server");
    let output = conformance(&["--backend", "postgres", "--dsn", &dsn, dir.path().to_str().expect("UTF-8 temp path")]);
    let lines = stdout_lines(&output);
    assert_eq!(lines.last().map(String::as_str), Some("1 passed, 0 failed"), "{lines:?}");
    assert_eq!(output.status.code(), Some(0));
    let output = conformance(&["--backend", "postgres"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs --dsn"));
    let output = conformance(&["--backend", "oracle"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown backend \"oracle\""));
}
