//! Bad input through the client: a typed error and nothing written.

use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, ErrorKind, PurgeFilter, SubmitOptions, TaskStatus};
use cairnq_testkit::support::ByParams;

use crate::common::{count, fresh_path, open_client};

#[derive(serde::Serialize)]
struct Measurement {
    value: f64,
}

fn assert_kind<T: std::fmt::Debug>(result: cairnq_core::Result<T>, kind: ErrorKind, what: &str) {
    match result {
        Err(e) => assert_eq!(e.kind(), kind, "{what}: {e}"),
        Ok(v) => panic!("{what} was accepted: {v:?}"),
    }
}

async fn submit(client: &CairnQ, name: &str, options: SubmitOptions) -> cairnq_core::Result<cairnq_core::Task> {
    client.submit(name, &serde_json::json!({})).options(options).await
}

#[tokio::test]
async fn bad_input_is_refused_with_typed_errors_and_writes_nothing() {
    let fresh = fresh_path();
    let client = open_client(&fresh.path).await;
    let invalid = ErrorKind::ValidationError;

    assert_kind(submit(&client, "", SubmitOptions::new()).await, invalid, "empty name");
    assert_kind(submit(&client, "job", SubmitOptions::new().delay(Duration::MAX)).await, invalid, "an endless delay");
    assert_kind(submit(&client, "job", SubmitOptions::new().max_attempts(0)).await, invalid, "max_attempts 0");
    let above_32_bits = SubmitOptions::new().max_attempts(u32::MAX);
    assert_kind(submit(&client, "job", above_32_bits).await, invalid, "max_attempts above i32::MAX");
    let running = PurgeFilter::new().status(TaskStatus::Running);
    assert_kind(client.purge(&running).await, invalid, "purge a non-terminal status");
    assert_kind(client.purge(&PurgeFilter::new().limit(0)).await, invalid, "purge limit 0");
    let nan = Measurement { value: f64::NAN };
    assert_kind(client.submit("job", &nan).await, ErrorKind::SerializationError, "NaN payload");

    assert_eq!(count(&fresh.path, "select count(*) from cairnq_tasks"), 0);
    assert_eq!(count(&fresh.path, "select count(*) from cairnq_task_keys"), 0);
}

#[tokio::test]
async fn a_nan_result_is_refused_and_the_task_keeps_running() {
    let fresh = fresh_path();
    let client = open_client(&fresh.path).await;
    let task = client.submit("job", &serde_json::json!({})).await.expect("submit");
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1));
    assert_eq!(client.claim(&claim).await.expect("claim").len(), 1);

    // A typed result goes through the JSON boundary before it can be stored.
    let result = cairnq_core::Json::encode(&Measurement { value: f64::INFINITY })
        .map(|value| SettleParams::new(&task.id, "w").result(value))
        .map_err(cairnq_core::Error::from);
    assert_kind(result, ErrorKind::SerializationError, "infinite result");

    let row = client.get(&task.id).await.expect("get").expect("task exists");
    assert_eq!(row.status, TaskStatus::Running);
    assert_eq!(row.result, None);
}
