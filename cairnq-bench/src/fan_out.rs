//! What a flow costs (issue 26's benchmark): one root task whose handler
//! fans out N no-op children and a join waiting for them all
//! (`TaskContext::fan_out`), timed from the root's submit to the join's
//! success, beside a plain burn-down of as many tasks at the same
//! concurrency in the same process. The issue asks the flow to run at no
//! less than half the burn-down's rate; the two are measured alternately
//! (better of [`ROUNDS`] each), so a shared machine's load falls on both
//! alike and the ratio is the number that counts.
//!
//! The flow's time holds everything a plain burn-down's does not: the
//! root's submit and claim, the handler's one transaction inserting the
//! children and the join's N dependency edges, and the release of the join
//! when its last dependency settles.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Error, Result, TaskSpec, TaskStatus};
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::workloads::{burn_down, noop_specs};
use super::{expect_count, per_second};
use cairnq_testkit::BackendFactory;

/// The worker's concurrency for both sides: the burn-down variant
/// `burn_down_c64` runs at.
pub(super) const CONCURRENCY: usize = 64;

/// Alternating rounds of (burn-down, flow); each side's best counts.
pub(super) const ROUNDS: usize = 2;

/// The root task: its handler fans out.
const ROOT: &str = "flow_root";
/// The join waiting for every child.
const JOIN: &str = "flow_join";

/// Runs the flow of `children` children and the burn-down of as many
/// tasks alternately, [`ROUNDS`] times, on fresh stores of `factory`:
/// (metric, value, detail) of the flow's rate, the burn-down's, and the
/// flow's rate over the burn-down's.
pub(super) async fn flow_fan_out(factory: &dyn BackendFactory, children: usize) -> Result<Vec<(String, f64, String)>> {
    let (mut flow, mut burned) = (0.0_f64, 0.0_f64);
    for _ in 0..ROUNDS {
        burned = burned.max(burn_down(factory, children + 2, CONCURRENCY, || Ok(())).await?);
        flow = flow.max(one_flow(factory, children).await?);
    }
    let tasks = children + 2;
    Ok(vec![
        (
            "tasks_per_s".to_string(),
            flow,
            format!(
                "{tasks} tasks: one root whose handler fans out {children} no-op children and a join; the root's \
                 submit to the join's success, concurrency {CONCURRENCY}; better of {ROUNDS} alternating with the \
                 burn-down"
            ),
        ),
        (
            format!("burn_down_c{CONCURRENCY}_tasks_per_s"),
            burned,
            format!("as burn_down_c{CONCURRENCY} with {tasks} tasks, in the same process; better of {ROUNDS}"),
        ),
        ("flow_over_burn_down".to_string(), flow / burned.max(1e-9), "ratio (target >= 0.5, issue 26)".to_string()),
    ])
}

/// One flow on a fresh store: the root is submitted, a worker of
/// [`CONCURRENCY`] started, and the clock stops when the store shows the
/// join succeeded; every task of the flow must then show succeeded.
async fn one_flow(factory: &dyn BackendFactory, children: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store.clone());
    let (joined_tx, mut joined_rx) = mpsc::unbounded_channel::<String>();
    let mut worker = Worker::new(CairnQ::from_shared(store), WorkerOptions::new().concurrency(CONCURRENCY))?;
    register(&mut worker, joined_tx)?;

    let start = Instant::now();
    client.submit(ROOT, &json!({ "children": children })).await?;
    let handle = worker.spawn();
    let join_id = tokio::time::timeout(Duration::from_secs(600), joined_rx.recv())
        .await
        .ok()
        .flatten()
        .ok_or_else(|| Error::validation("flow_fan_out", "the join did not run"))?;
    wait_for_success(&client, &join_id).await?;
    let rate = per_second(children + 2, start.elapsed());
    handle.stop_and_join().await?;
    expect_count(&client, TaskStatus::Succeeded, children + 2).await?;
    Ok(rate)
}

/// The root (fans out `payload.children` no-op children and a join), the
/// children (`noop`) and the join (sends its id to `joined`).
fn register(worker: &mut Worker, joined: mpsc::UnboundedSender<String>) -> Result<()> {
    worker.task(ROOT, |ctx: TaskContext, payload: Value| async move {
        let count = payload["children"].as_u64().unwrap_or(0) as usize;
        let written = ctx.fan_out(noop_specs(count, &json!({})), TaskSpec::new(JOIN, &json!({}))).await?;
        if written.is_none_or(|w| w.children.len() != count) {
            return Err(TaskError::new("the fan-out did not write every child"));
        }
        Ok::<_, TaskError>(Value::Null)
    })?;
    worker.task("noop", |_ctx: TaskContext, _payload: Value| async { Ok::<_, TaskError>(Value::Null) })?;
    let joined = Arc::new(joined);
    worker.task(JOIN, move |ctx: TaskContext, _payload: Value| {
        let _ = joined.send(ctx.task_id().to_string());
        async { Ok::<_, TaskError>(Value::Null) }
    })?;
    Ok(())
}

/// Waits until `task_id` shows succeeded (the settle trails the handler).
async fn wait_for_success(client: &CairnQ, task_id: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.get(task_id).await?.map(|t| t.status) {
            Some(TaskStatus::Succeeded) => return Ok(()),
            Some(status) if status.is_terminal() => {
                return Err(Error::validation("flow_fan_out", format!("the join ended {status}")));
            }
            _ if Instant::now() > deadline => {
                return Err(Error::validation("flow_fan_out", "the join did not settle in 60 s"));
            }
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}
