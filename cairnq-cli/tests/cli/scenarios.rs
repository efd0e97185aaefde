//! What the binary prints equals what the library returns, and bulk
//! changes touch exactly what they select: each scenario runs on a SQLite
//! file and on a Postgres schema.

use cairnq_core::{ListCursor, ListFilter, TaskStatus};
use serde_json::{Value, json};

use crate::support::{Fixture, as_json};

/// Tasks on two queues and two names, some failed.
async fn seed(fixture: &Fixture) -> Vec<cairnq_core::Task> {
    let mut tasks = Vec::new();
    for (i, (name, queue)) in
        [("resize", "images"), ("resize", "images"), ("resize", "images"), ("resize", "video"), ("email", "images")]
            .into_iter()
            .enumerate()
    {
        let task = fixture.client.submit(name, &json!({"n": i, "text": "héllo"})).queue(queue).await.expect("submit");
        tasks.push(task);
    }
    tasks
}

async fn json_equals_library(fixture: Fixture) {
    let tasks = seed(&fixture).await;
    fixture.fail(&tasks[3]).await;
    let cli = &fixture.cli;

    let got = cli.json(&["-o", "json", "get", &tasks[3].id]);
    assert_eq!(got, as_json(&fixture.client.get(&tasks[3].id).await.expect("get")));

    let listed = cli.json(&["-o", "json", "list", "--queue", "images", "--limit", "2"]);
    let page = fixture.client.list(&ListFilter::new().queue("images").limit(2)).await.expect("list");
    assert_eq!(listed, as_json(&page));
    let next = listed["next"].as_str().expect("a full page has a cursor").to_string();
    let second = cli.json(&["-o", "json", "list", "--queue", "images", "--limit", "2", "--after", &next]);
    let cursor: ListCursor = next.parse().expect("cursor");
    let library = fixture.client.list(&ListFilter::new().queue("images").limit(2).after(cursor)).await.expect("list");
    assert_eq!(second, as_json(&library));
    assert_eq!(second["tasks"].as_array().map(Vec::len), Some(2));

    let failed = cli.json(&["-o", "json", "list", "--status", "failed"]);
    assert_eq!(
        failed,
        as_json(&fixture.client.list(&ListFilter::new().status(TaskStatus::Failed).limit(50)).await.expect("list"))
    );

    assert_eq!(cli.json(&["-o", "json", "stats"]), as_json(&fixture.client.stats(None).await.expect("stats")));
    let one = cli.json(&["-o", "json", "stats", "--queue", "empty"]);
    assert_eq!(one, as_json(&fixture.client.stats(Some("empty")).await.expect("stats")));

    let lines = cli.run(&["-o", "jsonl", "list", "--name", "resize"]);
    let decoded: Vec<Value> = lines.stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(decoded.len(), 4, "{}", lines.stdout);

    let table = cli.run(&["list", "--queue", "video"]);
    assert!(table.stdout.starts_with("ID "), "{}", table.stdout);
    assert!(table.stdout.contains(&tasks[3].id) && table.stdout.contains("failed"), "{}", table.stdout);
}

async fn bulk_retry_by_filter(fixture: Fixture) {
    let tasks = seed(&fixture).await;
    // Fail every task: three resize on images, one resize on video, one email on images.
    for task in &tasks {
        if fixture.client.get(&task.id).await.expect("get").is_some_and(|t| t.status == TaskStatus::Queued) {
            fixture.fail(task).await;
        }
    }
    let cli = &fixture.cli;
    let before = fixture.client.stats(None).await.expect("stats");

    let dry =
        cli.json(&["-o", "json", "retry", "--status", "failed", "--queue", "images", "--name", "resize", "--dry-run"]);
    assert_eq!(dry["count"], 3, "{dry}");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "--dry-run changed nothing");

    cli.run(&["retry", "--queue", "images", "--name", "resize"]).refused(2, "3 tasks match: pass --yes");
    assert_eq!(fixture.client.stats(None).await.expect("stats"), before, "refused without --yes");

    let retried =
        cli.json(&["-o", "json", "retry", "--queue", "images", "--name", "resize", "--yes", "--reset-attempt"]);
    let mut ids: Vec<&str> = retried.as_array().expect("array").iter().filter_map(|t| t["id"].as_str()).collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = tasks[..3].iter().map(|t| t.id.as_str()).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected, "exactly the matching failed tasks");
    for task in &tasks {
        let now = fixture.client.get(&task.id).await.expect("get").expect("task");
        let want = if expected.contains(&task.id.as_str()) { TaskStatus::Queued } else { TaskStatus::Failed };
        assert_eq!(now.status, want, "{} ({} on {})", task.id, task.name, task.queue);
        if want == TaskStatus::Queued {
            assert_eq!(now.attempt, 0, "--reset-attempt");
        }
    }

    // One task by id needs no --yes; a task that is not failed is refused.
    let one = cli.json(&["-o", "json", "retry", &tasks[3].id]);
    assert_eq!(one.as_array().map(Vec::len), Some(1));
    cli.run(&["retry", &tasks[3].id]).refused(1, "nothing to retry");

    // Cancel by filter: the queued ones of images.
    let canceled = cli.json(&["-o", "json", "cancel", "--queue", "images", "--yes"]);
    assert_eq!(canceled.as_array().map(Vec::len), Some(3), "{canceled}");
    assert_eq!(fixture.client.stats(Some("images")).await.expect("stats")["images"].canceled, 3);
}

async fn wait_and_purge(fixture: Fixture) {
    let tasks = seed(&fixture).await;
    let cli = &fixture.cli;
    cli.run(&["wait", &tasks[0].id, "--timeout", "300ms"]).refused(4, "not finished");
    fixture.fail(&tasks[3]).await;
    let failed = cli.run(&["-o", "json", "wait", &tasks[3].id]);
    assert_eq!(failed.code, 1, "a failed task exits 1: {}", failed.stderr);
    let printed: Value = serde_json::from_str(&failed.stdout).expect("the task is printed");
    assert_eq!(printed["status"], "failed");

    let purged = cli.json(&["-o", "json", "purge", "--older-than", "0s", "--status", "failed", "--yes"]);
    assert_eq!(purged, json!({"purged": 1}));
    assert!(fixture.client.get(&tasks[3].id).await.expect("get").is_none());
    cli.run(&["get", &tasks[3].id]).refused(3, "no task with id");
}

async fn submit_and_keys(fixture: Fixture) {
    let cli = &fixture.cli;
    let submitted = cli.json(&[
        "-o",
        "json",
        "submit",
        "report",
        "--payload",
        r#"{"big": 12345678901234567890}"#,
        "--key",
        "report-1",
        "--queue",
        "reports",
        "--priority",
        "-3",
        "--max-attempts",
        "5",
        "--metadata",
        r#"{"by": "cli"}"#,
        "--delay",
        "1h",
    ]);
    let task = fixture.client.get_by_key("report-1").await.expect("get").expect("submitted");
    assert_eq!(submitted, as_json(&task));
    assert_eq!(task.payload.as_str(), r#"{"big": 12345678901234567890}"#, "the payload is stored as written");
    assert_eq!((task.priority, task.max_attempts, task.queue.as_str()), (-3, 5, "reports"));
    assert!(task.run_at_ms > task.created_at_ms + 3_000_000, "delayed an hour");

    let from_stdin = cli.run_with_stdin(&["-o", "json", "submit", "report", "--payload", "-"], "[1, 2, 3]\n");
    assert_eq!(from_stdin.json()["payload"], json!([1, 2, 3]));

    cli.run(&["submit", "report", "--key", "report-1", "--conflict", "reject"]).refused(1, "already exists");
    assert_eq!(cli.json(&["-o", "json", "get", "--key", "report-1"])["id"], json!(task.id));
    let by_key = cli.json(&["-o", "json", "list", "--key", "report-1"]);
    assert_eq!(by_key["tasks"][0]["id"], json!(task.id));
}

macro_rules! on_both_backends {
    ($($scenario:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $scenario() {
                super::$scenario(crate::support::Fixture::sqlite().await).await;
            })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $scenario() {
                super::$scenario(crate::support::Fixture::postgres().await).await;
            })*
        }
    };
}

on_both_backends!(json_equals_library, bulk_retry_by_filter, wait_and_purge, submit_and_keys);
