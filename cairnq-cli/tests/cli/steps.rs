//! `cairnq get` shows a task's durable steps: a table after the task's
//! fields (name, attempt, when, a short value or the error), and a `steps`
//! array in `-o json` (empty for a task without steps).

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{ErrorEnvelope, Json};
use serde_json::{Value, json};

use crate::support::Fixture;

async fn get_shows_the_steps_a_task_stored(fixture: &Fixture) {
    let client = &fixture.client;
    let task = client.submit("checkout", &json!({})).await.expect("submit");
    let plain = client.submit("other", &json!({})).await.expect("submit");
    let worker = client.worker_session("worker_steps", Duration::from_secs(30)).expect("a session");
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["checkout".into()]);
    assert_eq!(worker.claim(vec![draw], vec![]).await.expect("claim").len(), 1);
    worker.save_step(&task.id, 1, "charge", Ok(Json::from(json!({"id": "ch_1"})))).await.expect("a value");
    let declined = ErrorEnvelope::new("declined", "card declined");
    worker.save_step(&task.id, 1, "charge#2", Err(&declined)).await.expect("an error");

    let table = fixture.cli.run(&["get", &task.id]).stdout;
    let line = |name: &str| table.lines().find(|l| l.split_whitespace().next() == Some(name)).map(str::to_string);
    assert!(table.contains("STEP") && table.contains("ATTEMPT"), "{table}");
    let charge = line("charge").unwrap_or_else(|| panic!("a charge row: {table}"));
    assert!(charge.contains(r#""ch_1""#) && charge.contains(" 1 "), "{charge}");
    let second = line("charge#2").unwrap_or_else(|| panic!("a charge#2 row: {table}"));
    assert!(second.contains("declined: card declined"), "{second}");

    let got = fixture.cli.json(&["-o", "json", "get", &task.id]);
    assert_eq!(got["id"], Value::from(task.id.as_str()), "the task's own fields stay: {got}");
    let names: Vec<&str> = got["steps"].as_array().expect("steps").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["charge", "charge#2"]);
    assert_eq!(got["steps"][0]["result"], json!({"id": "ch_1"}));
    assert_eq!(got["steps"][1]["error"]["code"], json!("declined"));

    let plain_json = fixture.cli.json(&["-o", "json", "get", &plain.id]);
    assert!(plain_json.get("steps").is_none(), "a task without steps prints the task's JSON alone: {plain_json}");
    assert!(!fixture.cli.run(&["get", &plain.id]).stdout.contains("STEP"), "no steps, no table");
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_get_shows_the_steps_a_task_stored() {
    get_shows_the_steps_a_task_stored(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_get_shows_the_steps_a_task_stored() {
    get_shows_the_steps_a_task_stored(&Fixture::postgres().await).await;
}
