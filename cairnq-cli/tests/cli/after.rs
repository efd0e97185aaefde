//! `cairnq submit --after ID` (repeatable, with `--on-dependency-failure`)
//! and what `list` and `get` say of a waiting task ("waiting for 1 of 2
//! tasks"), as it moves on when its dependencies end; an unknown
//! dependency is refused (exit 2, nothing written), on both backends.

use cairnq_core::{TaskStatus, is_waiting};
use serde_json::json;

use crate::support::Fixture;

async fn after_through_the_binary(fixture: &Fixture) {
    let cli = &fixture.cli;
    let a = fixture.client.submit("a", &json!(1)).await.expect("submit a");
    let b = fixture.client.submit("b", &json!(2)).await.expect("submit b");
    let c =
        cli.json(&["-o", "json", "submit", "c", "--after", &a.id, "--after", &b.id, "--on-dependency-failure", "run"]);
    let c_id = c["id"].as_str().expect("an id").to_string();
    let row = fixture.client.get(&c_id).await.expect("get").expect("c");
    assert!(is_waiting(&row), "c waits: {row:?}");

    let listed = cli.run(&["list"]);
    assert!(listed.stdout.contains("queued, waiting for 2 of 2 tasks"), "{}", listed.stdout);
    fixture.succeed(&a).await;
    let shown = cli.run(&["get", &c_id]);
    assert!(shown.stdout.contains("waiting for 1 of 2 tasks (runs even if one fails)"), "{}", shown.stdout);
    assert!(shown.stdout.contains("when its dependencies end"), "{}", shown.stdout);
    fixture.fail(&b).await;
    let row = fixture.client.get(&c_id).await.expect("get").expect("c");
    assert!(row.status == TaskStatus::Queued && !is_waiting(&row), "released by b's failure under run: {row:?}");
    let shown = cli.run(&["get", &c_id]);
    assert!(shown.stdout.contains("2 tasks, all ended"), "{}", shown.stdout);

    let d = cli.json(&["-o", "json", "submit", "d", "--after", &b.id]);
    assert_eq!(d["status"], json!("canceled"), "b already failed: canceled at once");
    assert_eq!(d["error"]["code"], json!("dependency_failed"));

    cli.run(&["submit", "e", "--after", "task_01J0000000000000000000NOPE"])
        .refused(2, "no task task_01J0000000000000000000NOPE");
    cli.run(&["submit", "e", "--after", ""]).refused(2, "--after");
    cli.run(&["submit", "e", "--on-dependency-failure", "run"]).refused(2, "--after");
    let names = fixture.client.list(&cairnq_core::ListFilter::new().name("e")).await.expect("list");
    assert!(names.tasks.is_empty(), "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_on_sqlite() {
    after_through_the_binary(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn after_on_postgres() {
    after_through_the_binary(&Fixture::postgres().await).await;
}
