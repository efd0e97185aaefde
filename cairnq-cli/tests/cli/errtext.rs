//! Errors read like the rest of the tool: the operation in words and the
//! cause, never an internal statement or pragma name, no phrase said twice,
//! no parentheses inside parentheses, durations as people write them, and
//! a refused connection names where it tried to connect. Each case drives
//! the binary against a real input that fails: a damaged file, a locked
//! file, a file that is no database, a closed port, a delayed task.

use crate::support::{Cli, Ran, path_text};

/// Statement and pragma names that used to reach people's screens, each
/// as the prefix of its driver's words (`list_tasks: database disk image
/// is malformed`).
const INTERNAL_NAMES: &[&str] = &[
    "list_tasks:",
    "list_tasks_in_order:",
    "cancel_task:",
    "analyze_tasks:",
    "synchronous:",
    "busy_timeout:",
    "begin immediate:",
    "journal_mode:",
    "quick_check:",
];

/// The failure's one line, checked against every rule of this file.
fn line_of(ran: &Ran, code: i32) -> String {
    assert_eq!(ran.code, code, "exit code; stderr: {}", ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "one line: {:?}", ran.stderr);
    let line = ran.stderr.trim_end().to_string();
    reads_like_the_tool(&line);
    line
}

fn reads_like_the_tool(line: &str) {
    assert!(!has_raw_milliseconds(line), "raw milliseconds in {line:?}");
    for name in INTERNAL_NAMES {
        assert!(!line.contains(name), "an internal name ({name}) in {line:?}");
    }
    let mut depth = 0_i32;
    for c in line.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        assert!(depth <= 1, "parentheses inside parentheses: {line:?}");
    }
}

/// "3596817 ms" or "3596817ms": a span a person has to divide. Under a
/// second, "250ms" is how people write it.
fn has_raw_milliseconds(line: &str) -> bool {
    let bytes = line.as_bytes();
    line.match_indices("ms").any(|(at, _)| {
        let before = line[..at].trim_end_matches(' ');
        let digits = before.bytes().rev().take_while(u8::is_ascii_digit).count();
        let word_ends = bytes.get(at + 2).is_none_or(|b| !b.is_ascii_alphanumeric());
        word_ends && (digits >= 4 || (digits > 0 && before.len() < at))
    })
}

#[test]
fn the_raw_milliseconds_check_tells_them_apart() {
    assert!(has_raw_milliseconds("not claimable for another 3596817 ms"));
    assert!(has_raw_milliseconds("at most 9223118634553975807ms"));
    assert!(has_raw_milliseconds("ran 250 ms late"));
    assert!(!has_raw_milliseconds("ran 250ms late; 59m 57s; items 12 msgs"));
}

/// A damaged file refuses a write with the operation in words.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_file_names_the_operation_not_the_statement() {
    let (fixture, _) = crate::damage::damaged_file().await;
    let line = line_of(&fixture.cli.run(&["cancel", "--queue", "default", "--yes"]), 1);
    assert!(line.contains("could not list the tasks: database disk image is malformed"), "{line}");
    assert!(line.contains("is damaged"), "{line}");
    // SQLite's findings hold parentheses of their own (`btreeInitPage()`):
    // the message sets them in no parentheses of its own.
    let line = line_of(&fixture.cli.run(&["stats"]), 1);
    assert!(line.contains("is damaged in cairnq_tasks: "), "{line}");
    assert!(line.contains("more problems. Its counts and lists would be incomplete"), "{line}");
}

/// Another process holds the write lock past the busy timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_locked_file_says_what_could_not_be_done() {
    let fixture = crate::support::Fixture::sqlite().await;
    let task = fixture.client.submit("resize", &serde_json::json!({})).await.expect("submit");
    let holder = cairnq_sqlite::rusqlite::Connection::open(&fixture.cli.db).expect("open");
    holder.execute_batch("begin immediate").expect("take the write lock");
    let line = line_of(&fixture.cli.run(&["cancel", &task.id]), 1);
    assert!(line.ends_with("could not take the write lock: database is locked"), "{line}");
    holder.execute_batch("rollback").expect("release");
}

/// Files that are no database, or a database cut short, say so once.
#[tokio::test(flavor = "multi_thread")]
async fn files_that_are_not_databases_say_so_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let junk = dir.path().join("notes.db");
    std::fs::write(&junk, "just some notes, not a database, long enough to pass for a header\n".repeat(4))
        .expect("write");
    let line = line_of(&Cli { db: path_text(&junk), schema: None }.run(&["stats"]), 1);
    assert!(line.contains("is not a SQLite database: it does not start with the SQLite file header"), "{line}");
    assert!(!line.contains("file is not a database"), "said twice: {line}");

    let good = dir.path().join("good.db");
    let cli = Cli { db: path_text(&good), schema: None };
    cli.run(&["migrate"]);
    let cut = dir.path().join("cut.db");
    let bytes = std::fs::read(&good).expect("read");
    std::fs::write(&cut, &bytes[..100]).expect("write");
    let line = line_of(&Cli { db: path_text(&cut), schema: None }.run(&["stats"]), 1);
    assert!(line.ends_with(&format!("cannot open {}: database disk image is malformed", path_text(&cut))), "{line}");
}

/// Bad input says what is wrong once, and what is accepted.
#[test]
fn bad_input_says_each_thing_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cli = Cli { db: path_text(&dir.path().join("queue.db")), schema: None };
    let line = line_of(&cli.run(&["submit", "x", "--payload", "{nope"]), 2);
    assert!(line.ends_with("--payload is not valid JSON: key must be a string at line 1 column 2"), "{line}");
    assert_eq!(line.matches("JSON").count(), 1, "{line}");
    let line = line_of(&cli.run(&["list", "--status", "bogus"]), 2);
    assert!(line.contains("valid values: queued, running, succeeded, failed, canceled"), "{line}");
    let line = line_of(&cli.run(&["schedule", "add", "s", "--task", "t", "--every", "10x"]), 2);
    assert!(line.contains("\"10x\" is not a duration: unknown time unit"), "{line}");
    let bad_port = Cli { db: "postgres://postgres@127.0.0.1:port/x".into(), schema: None };
    let line = line_of(&bad_port.run(&["stats"]), 2);
    assert!(line.ends_with("not a Postgres connection string: invalid value for option `port`"), "{line}");
}

/// Spans read as people write them, whatever their size.
#[tokio::test(flavor = "multi_thread")]
async fn durations_read_like_durations() {
    let fixture = crate::support::Fixture::sqlite().await;
    let later = fixture.client.submit("later", &serde_json::json!({})).delay(std::time::Duration::from_secs(3_600));
    let later = later.await.expect("submit");
    let line = line_of(&fixture.cli.run(&["wait", &later.id, "--timeout", "1s"]), 4);
    assert!(line.contains("it is delayed: not claimable for another 59m "), "{line}");
    let line = line_of(&fixture.cli.run(&["submit", "x", "--delay", "300000000y"]), 2);
    assert!(line.contains("the longest is about 292 million years"), "{line}");
    let line = line_of(&fixture.cli.run(&["worker", "--exec", "cat", "--lease", "300000000y"]), 2);
    assert!(line.ends_with("invalid lease: must be at least 1ms and at most about 292 million years"), "{line}");
}

/// A refused connection names where it tried, for every command that
/// connects, and says it could not connect once.
#[test]
fn a_refused_postgres_connection_names_host_and_port() {
    let refused = Cli { db: "postgres://postgres@127.0.0.1:1/x".into(), schema: None };
    for args in [&["stats"][..], &["list"], &["doctor"], &["worker", "--exec", "cat"]] {
        let line = line_of(&refused.run(args), 1);
        assert!(line.contains("could not connect to Postgres at 127.0.0.1:1: "), "{args:?}: {line}");
        assert!(line.to_lowercase().contains("connection refused"), "{args:?}: {line}");
        assert!(!line.contains("error connecting"), "said twice: {args:?}: {line}");
    }
}
