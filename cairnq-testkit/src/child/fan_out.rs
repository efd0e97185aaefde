//! The child's `fan-out` mode: a worker whose handlers split work with
//! `TaskContext::fan_out` (`fan_split`), run the parts (`fan_part`) and
//! join them (`fan_join`), so a test can SIGKILL it anywhere in a fan-out
//! and hold what is left against the all-or-nothing rule.
//!
//! - `fan_split` (payload `{"n": N, "part_ms": MS}`) prints `splitting
//!   <task id> <attempt>` as its attempt starts (the test's cue to kill),
//!   fans out N `fan_part` children (payload `{"i": I, "ms": MS}`) and one
//!   `fan_join`, then prints `fanned <task id>`.
//! - `fan_part` sleeps `ms` and returns `i`.
//! - `fan_join` appends `start` and `end` lines to the run log around
//!   reading its dependencies, and returns `{"seen": <succeeded
//!   dependencies>, "attempt": <attempt>, "worker": <worker id>}`.

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Clock, Result, SubmitOptions, SystemClock, TaskSpec, TaskStatus};
use cairnq_worker::{TaskContext, TaskError, Worker};
use serde_json::{Value, json};

use super::record::{RecordLine, RunLog};

/// The handler that fans out.
pub const SPLIT: &str = "fan_split";
/// Its children.
pub const PART: &str = "fan_part";
/// The join waiting for them.
pub const JOIN: &str = "fan_join";
/// The attempts a split, its children and its join may use: every worker
/// the chaos test SIGKILLs may have claimed them (see `split`).
pub const KILLS_TO_SPARE: u32 = 50;

/// Registers the mode's three handlers; `count` is called once per run.
pub(super) fn register(
    worker: &mut Worker,
    log: Arc<RunLog>,
    count: impl Fn() -> u64 + Clone + Send + Sync + 'static,
) -> Result<()> {
    let counted = count.clone();
    worker.task(SPLIT, move |ctx: TaskContext, payload: Value| {
        counted();
        split(ctx, payload)
    })?;
    let counted = count.clone();
    worker.task(PART, move |_ctx: TaskContext, payload: Value| {
        counted();
        async move {
            tokio::time::sleep(Duration::from_millis(payload["ms"].as_u64().unwrap_or(0))).await;
            Ok::<_, TaskError>(payload["i"].clone())
        }
    })?;
    worker.task(JOIN, move |ctx: TaskContext, _: Value| {
        count();
        join(ctx, log.clone())
    })?;
    Ok(())
}

async fn split(ctx: TaskContext, payload: Value) -> std::result::Result<Value, TaskError> {
    println!("splitting {} {}", ctx.task_id(), ctx.attempt());
    let n = payload["n"].as_u64().unwrap_or(0);
    let ms = payload["part_ms"].as_u64().unwrap_or(0);
    // Attempts to spare, as the test gives the splits: each worker the test
    // SIGKILLs may hold up to a prefetch of these claimed (a claim counts
    // an attempt) without running them, so the default 3 could run out on
    // the kills alone, which is not what the test is about.
    let options = SubmitOptions::new().max_attempts(KILLS_TO_SPARE);
    let parts = (0..n).map(|i| TaskSpec::new(PART, &json!({"i": i, "ms": ms})).options(options.clone()));
    let join = TaskSpec::new(JOIN, &json!({})).options(options.clone());
    ctx.fan_out(parts, join).result(&json!({"parts": n})).await?;
    println!("fanned {}", ctx.task_id());
    Ok(Value::Null)
}

async fn join(ctx: TaskContext, log: Arc<RunLog>) -> std::result::Result<Value, TaskError> {
    let (task, attempt, worker) = (ctx.task_id().to_string(), ctx.attempt(), ctx.worker_id().to_string());
    let not_logged = |e: std::io::Error| TaskError::retryable(format!("cannot write the run log: {e}"));
    let now = || SystemClock.now_ms();
    log.append(&RecordLine::Start { task: task.clone(), attempt, worker: worker.clone(), at_ms: now() })
        .map_err(not_logged)?;
    let seen = ctx.dependencies().await?.iter().filter(|t| t.status == TaskStatus::Succeeded).count();
    log.append(&RecordLine::End { task, attempt, worker: worker.clone(), at_ms: now() }).map_err(not_logged)?;
    Ok(json!({"seen": seen, "attempt": attempt, "worker": worker}))
}
