//! How long a queue has waited, as the library, `doctor` and `top` tell
//! it: from when its oldest due task became due (the later of its run_at
//! and its creation), so a delayed task is not waiting yet and a task is
//! never waiting from before it existed.

use std::time::Duration;

use cairnq_core::{Task, now_ms};
use serde_json::{Value, json};

use crate::support::Fixture;

const MINUTE: i64 = 60_000;

/// Three queues whose ages only the due time tells right.
pub(crate) struct Scene {
    /// `later`: its only task was created 17m ago and is due in 42m.
    pub(crate) later: Task,
    /// `lonely`: created 2h ago with a 1h delay: due, and waiting, 1h.
    pub(crate) lonely: Task,
    /// `early`: created 30m ago with a run_at 3h ago (a foreign writer):
    /// waiting 30m.
    pub(crate) early_written: Task,
    /// `early`: created and due 2h ago, behind `early_written` in run_at
    /// order: the queue's oldest due task.
    pub(crate) early_due: Task,
}

impl Scene {
    pub(crate) async fn set_up(fixture: &Fixture) -> Self {
        let now = now_ms();
        let submit = |name: &'static str, queue: &'static str| async move {
            fixture.client.submit(name, &json!({})).queue(queue).delay(Duration::from_secs(3600)).await.expect("submit")
        };
        let later = submit("reminder", "later").await;
        fixture.set_times(&later.id, now - 17 * MINUTE, now + 42 * MINUTE).await;
        let lonely = submit("orphan", "lonely").await;
        fixture.set_times(&lonely.id, now - 120 * MINUTE, now - 60 * MINUTE).await;
        let early_written = submit("backfill", "early").await;
        fixture.set_times(&early_written.id, now - 30 * MINUTE, now - 180 * MINUTE).await;
        let early_due = submit("backfill", "early").await;
        fixture.set_times(&early_due.id, now - 120 * MINUTE, now - 120 * MINUTE).await;
        Self { later, lonely, early_written, early_due }
    }
}

/// Whether `ms` is `minutes` and at most a few more (the test's own run).
fn about(ms: i64, minutes: i64) -> bool {
    (minutes * MINUTE..(minutes + 5) * MINUTE).contains(&ms)
}

async fn ages_count_from_when_tasks_became_due(fixture: &Fixture) {
    let scene = Scene::set_up(fixture).await;
    let ages = fixture.client.oldest_due(None).await.expect("oldest due");
    let age = |queue: &str| ages.iter().find(|a| a.queue == queue).map(|a| (a.task_id.clone(), a.age.as_millis()));
    assert_eq!(age("later"), None, "{} is due in 42m: not waiting ({ages:?})", scene.later.id);
    let (id, ms) = age("lonely").expect("lonely waits");
    assert!(id == scene.lonely.id && about(i64::try_from(ms).expect("ms"), 60), "due 1h ago: {ages:?}");
    let (id, ms) = age("early").expect("early waits");
    assert_eq!(id, scene.early_due.id, "not {}, which did not exist 3h ago", scene.early_written.id);
    assert!(about(i64::try_from(ms).expect("ms"), 120), "due 2h ago: {ages:?}");

    let ran = fixture.cli.run(&["-o", "json", "doctor"]);
    let report: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    let oldest = &report["oldest_due"];
    assert_eq!(
        (&oldest["id"], &oldest["name"], &oldest["queue"]),
        (&json!(scene.early_due.id), &json!("backfill"), &json!("early"))
    );
    assert!(oldest["waited_ms"].as_i64().is_some_and(|ms| about(ms, 120)), "{report}");
    let unclaimed: Vec<(&Value, &Value, i64)> = report["unclaimed_names"]
        .as_array()
        .expect("unclaimed")
        .iter()
        .map(|u| (&u["queue"], &u["waiting"], u["oldest_age_ms"].as_i64().expect("age")))
        .collect();
    assert_eq!(unclaimed.len(), 2, "not the delayed task: {report}");
    assert!(unclaimed.iter().any(|(q, n, ms)| *q == "early" && *n == 2 && about(*ms, 120)), "{report}");
    assert!(unclaimed.iter().any(|(q, n, ms)| *q == "lonely" && *n == 1 && about(*ms, 60)), "{report}");
    let table = fixture.cli.run(&["doctor"]).stdout;
    let line = format!("oldest due        {} (backfill on early), waited 2h", scene.early_due.id);
    assert!(table.contains(&line), "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ages_count_from_when_tasks_became_due_on_sqlite() {
    ages_count_from_when_tasks_became_due(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ages_count_from_when_tasks_became_due_on_postgres() {
    ages_count_from_when_tasks_became_due(&Fixture::postgres().await).await;
}
