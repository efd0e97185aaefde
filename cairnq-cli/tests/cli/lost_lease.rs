//! A worker killed mid-task (a real `cairnq worker` process, SIGKILL):
//! lease recovery puts the task back in the queue, and `get` and `doctor`
//! show that an attempt was lost to an expired lease, from what the
//! protocol keeps (an attempt that ended with no error recorded).

use std::process::Stdio;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{Task, TaskStatus};
use cairnq_testkit::support::eventually_within;
use serde_json::{Value, json};

use crate::support::Fixture;

async fn read(fixture: &Fixture, id: &str) -> Task {
    fixture.client.get(id).await.expect("get").expect("the task")
}

#[tokio::test(flavor = "multi_thread")]
async fn get_and_doctor_show_an_attempt_lost_with_its_killed_worker() {
    let fixture = Fixture::sqlite().await;
    let task = fixture.client.submit("crunch", &json!({})).await.expect("submit");
    let mut worker = fixture
        .cli
        .command(&["worker", "--exec", "sleep 3", "--name", "crunch", "--lease", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the worker");
    eventually_within("the worker runs the task", Duration::from_secs(30), || async {
        read(&fixture, &task.id).await.status == TaskStatus::Running
    })
    .await;
    worker.kill().expect("SIGKILL the worker");
    worker.wait().expect("reap");
    let healthy = fixture.cli.run(&["get", &task.id]).stdout;
    assert!(!healthy.contains("lost attempt"), "running, nothing lost yet: {healthy}");

    // Once the lease ran out, any claim recovers it (here one on another queue).
    eventually_within("the lease runs out", Duration::from_secs(30), || async {
        read(&fixture, &task.id).await.lease_until_ms.is_some_and(|lease| lease < cairnq_core::now_ms())
    })
    .await;
    let bystander = fixture.client.worker_session("bystander", Duration::from_secs(1)).expect("a session");
    bystander.claim(vec![ClaimDraw::new(vec!["elsewhere".into()])], vec![]).await.expect("claim");
    let requeued = read(&fixture, &task.id).await;
    assert_eq!((requeued.status, requeued.attempt, requeued.error.clone()), (TaskStatus::Queued, 1, None));

    let shown = fixture.cli.run(&["get", &task.id]).stdout;
    let lost =
        "lost attempt  attempt 1: its lease expired (the worker died or stalled); the task went back to the queue";
    assert!(shown.contains(lost), "{shown}");
    let report: Value = serde_json::from_str(&fixture.cli.run(&["-o", "json", "doctor"]).stdout).expect("JSON");
    assert_eq!(report["lost_leases"], json!([{"id": task.id, "attempt": 1}]), "{report}");
    let table = fixture.cli.run(&["doctor"]).stdout;
    assert!(table.contains("lost attempts     1 task(s)") && table.contains(&task.id), "{table}");

    // Claimed again and finished: the lost first attempt still shows.
    fixture.succeed(&requeued).await;
    let shown = fixture.cli.run(&["get", &task.id]).stdout;
    assert!(shown.contains("succeeded") && shown.contains("lost attempt  attempt 1: its lease expired"), "{shown}");
}
