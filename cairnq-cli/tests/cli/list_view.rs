//! What `cairnq list` tells an operator without jq: why each task failed
//! (the error envelope's message, in its own column) and only the tasks
//! of a time window (`--since` / `--until`, a duration ago or an RFC 3339
//! timestamp), read by the library's created range on either backend.

use std::time::{Duration, UNIX_EPOCH};

use cairnq_core::now_ms;
use serde_json::{Value, json};

use crate::support::Fixture;

const HOUR: i64 = 3_600_000;

/// The ids a JSON page lists, sorted.
fn ids(page: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        page["tasks"].as_array().expect("tasks").iter().map(|t| t["id"].as_str().expect("id").to_string()).collect();
    ids.sort_unstable();
    ids
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    ids.sort_unstable();
    ids
}

/// `ms` as an RFC 3339 timestamp, in UTC or at a +02:00 offset.
fn rfc3339(ms: i64, offset: bool) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).expect("after 1970"));
    let utc = humantime::format_rfc3339_seconds(at).to_string();
    if !offset {
        return utc;
    }
    let shifted = at + Duration::from_secs(7200);
    humantime::format_rfc3339_seconds(shifted).to_string().replace('Z', "+02:00")
}

async fn the_list_shows_why_tasks_failed_and_filters_by_created_time(fixture: &Fixture) {
    let cli = &fixture.cli;
    let now = now_ms();
    let old = fixture.client.submit("resize", &json!({"n": 1})).await.expect("submit");
    fixture.set_times(&old.id, now - 3 * HOUR, now - 3 * HOUR).await;
    let broken = fixture.client.submit("resize", &json!({"n": 2})).await.expect("submit");
    fixture.fail(&broken).await;
    let fresh = fixture.client.submit("resize", &json!({"n": 3})).await.expect("submit");

    let table = cli.run(&["list"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let header = table.stdout.lines().next().expect("a header");
    assert!(header.trim_end().ends_with("ERROR"), "an ERROR column: {header}");
    let failed_line = table.stdout.lines().find(|l| l.starts_with(&broken.id)).expect("the failed task's row");
    assert!(failed_line.ends_with(&format!("failed {}", broken.id)), "the envelope's message: {failed_line}");
    assert!(!failed_line.contains("\"code\""), "not the envelope's JSON: {failed_line}");
    let fresh_line = table.stdout.lines().find(|l| l.starts_with(&fresh.id)).expect("the fresh task's row");
    assert!(fresh_line.ends_with('-'), "no error, no message: {fresh_line}");

    let page = cli.json(&["-o", "json", "list"]);
    let listed = page["tasks"].as_array().expect("tasks").iter().find(|t| t["id"] == broken.id.as_str()).cloned();
    let error = &listed.expect("listed")["error"];
    assert_eq!(error["message"], format!("failed {}", broken.id), "JSON keeps the whole envelope: {error}");
    assert_eq!(error["code"], "boom");

    let list = |args: &[&str]| cli.json(&[&["-o", "json", "list"][..], args].concat());
    assert_eq!(ids(&list(&["--since", "1h"])), sorted(&[&broken.id, &fresh.id]), "the last hour");
    assert_eq!(ids(&list(&["--until", "2h"])), sorted(&[&old.id]), "before two hours ago");
    assert_eq!(ids(&list(&["--since", "4h", "--until", "2h"])), sorted(&[&old.id]), "a window");
    let since = rfc3339(now - 4 * HOUR, false);
    assert_eq!(ids(&list(&["--since", &since])).len(), 3, "an RFC 3339 time: {since}");
    let until = rfc3339(now - 2 * HOUR, true);
    assert_eq!(ids(&list(&["--until", &until])), sorted(&[&old.id]), "at an offset: {until}");
    let by_key_window = list(&["--since", "1h", "--status", "failed"]);
    assert_eq!(ids(&by_key_window), sorted(&[&broken.id]), "beside another filter");

    cli.run(&["list", "--since", "yesterday"]).refused(2, "is not a time");
    cli.run(&["list", "--since", "1h", "--until", "2h"]).refused(2, "--until is before --since");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_shows_why_tasks_failed_and_filters_by_created_time_on_sqlite() {
    the_list_shows_why_tasks_failed_and_filters_by_created_time(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_shows_why_tasks_failed_and_filters_by_created_time_on_postgres() {
    the_list_shows_why_tasks_failed_and_filters_by_created_time(&Fixture::postgres().await).await;
}
