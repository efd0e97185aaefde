//! The ops of CONFORMANCE.md, each run through [`CairnQ`] so the client's
//! validation is exercised, with results turned into the JSON shapes the
//! scenarios assert on (task rows by column name).

use std::str::FromStr;
use std::time::Duration;

use cairnq_core::backend::new_worker_id;
use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, Conflict, Error, ListFilter, PurgeFilter, SubmitOptions, TaskSpec, TaskStatus, WorkerSession,
};
use serde::Serialize;
use serde_json::{Value, json};

use super::args::{Args, StepError};

const SUBMIT: &[&str] = &[
    "name",
    "payload",
    "key",
    "queue",
    "conflict",
    "max_attempts",
    "priority",
    "metadata",
    "correlation_id",
    "run_at_delay_ms",
];
const LIST: &[&str] = &["status", "queue", "name", "root_id", "correlation_id", "limit", "offset"];
const PURGE: &[&str] = &["older_than_ms", "queue", "status", "name", "limit"];
const CLAIM: &[&str] = &["queues", "worker_id", "lease_ms", "limit", "names"];
const SETTLE: &[&str] = &["id", "worker_id", "result"];
const FAIL: &[&str] = &["id", "worker_id", "error", "retryable", "delay_ms"];
const DEFAULT_LEASE_MS: i64 = 30_000;
const DEFAULT_QUEUE: &str = "default";

/// Runs `op` with resolved `args`; the result as scenario JSON.
pub(crate) async fn run(client: &CairnQ, op: &str, args: Value) -> Result<Value, StepError> {
    match op {
        "submit" => submit(client, &Args::new(args, SUBMIT)?).await,
        "get" => to_json(&client.get(&one(args, "id")?).await?),
        "get_by_key" => to_json(&client.get_by_key(&one(args, "key")?).await?),
        "get_status" => to_json(&client.get_status(&one(args, "id")?).await?),
        "get_status_by_key" => to_json(&client.get_status_by_key(&one(args, "key")?).await?),
        "list" => list(client, &Args::new(args, LIST)?).await,
        "cancel" => to_json(&client.cancel(&one(args, "id")?).await?),
        "cancel_by_key" => to_json(&client.cancel_by_key(&one(args, "key")?).await?),
        "retry" => retry(client, &Args::new(args, &["id", "reset_attempt"])?, "id").await,
        "retry_by_key" => retry(client, &Args::new(args, &["key", "reset_attempt"])?, "key").await,
        "purge" => purge(client, &Args::new(args, PURGE)?).await,
        "stats" => to_json(&client.stats(Args::new(args, &["queue"])?.string("queue")?.as_deref()).await?),
        "queue_depth" => queue_depth(client, &Args::new(args, &["queue", "max_depth"])?).await,
        _ => run_worker_op(client, op, args).await,
    }
}

async fn run_worker_op(client: &CairnQ, op: &str, args: Value) -> Result<Value, StepError> {
    match op {
        "claim" => claim(client, &Args::new(args, CLAIM)?).await,
        "heartbeat" => heartbeat(client, &Args::new(args, &["id", "worker_id", "lease_ms"])?).await,
        "heartbeat_batch" => heartbeat_batch(client, &Args::new(args, &["ids", "worker_id", "lease_ms"])?).await,
        "progress" => progress(client, &Args::new(args, &["id", "worker_id", "progress", "message"])?).await,
        "succeed" => settle(client, &Args::new(args, SETTLE)?, true).await,
        "complete" => settle(client, &Args::new(args, SETTLE)?, false).await,
        "fail" => fail(client, &Args::new(args, FAIL)?).await,
        "sleep" => sleep(&Args::new(args, &["ms"])?).await,
        other => Err(StepError::Scenario(format!("unknown op `{other}`"))),
    }
}

/// The single required string argument of ops like `get {id}`.
fn one(args: Value, name: &'static str) -> Result<String, StepError> {
    Args::new(args, &[name])?.required(name, Args::string)
}

fn to_json<T: Serialize>(value: &T) -> Result<Value, StepError> {
    serde_json::to_value(value).map_err(|e| StepError::Scenario(format!("result is not JSON: {e}")))
}

fn parse<T: FromStr>(value: Option<String>) -> Result<Option<T>, StepError>
where
    Error: From<T::Err>,
{
    Ok(value.map(|s| s.parse().map_err(Error::from)).transpose()?)
}

async fn submit(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let mut options = SubmitOptions::new()
        .queue(args.string("queue")?.unwrap_or_else(|| DEFAULT_QUEUE.to_string()))
        .max_attempts(args.sized_or("max_attempts", 3)?)
        .priority(args.sized_or("priority", 0)?)
        .delay(Duration::from_millis(args.sized_or("run_at_delay_ms", 0)?))
        .conflict(parse::<Conflict>(args.string("conflict")?)?.unwrap_or_default());
    options.key = args.string("key")?;
    options.metadata = args.value("metadata").map(cairnq_core::Json::from);
    options.correlation_id = args.string("correlation_id")?;
    let name = args.required("name", Args::string)?;
    let spec = TaskSpec::new(name, &args.value_or("payload", json!({}))).options(options);
    to_json(&client.submit_spec(&spec).await?)
}

async fn list(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let mut filter = ListFilter::new().limit(args.sized_or("limit", 100)?).offset(args.sized_or("offset", 0)?);
    filter.status = parse::<TaskStatus>(args.string("status")?)?;
    filter.queue = args.string("queue")?;
    filter.name = args.string("name")?;
    filter.root_id = args.string("root_id")?;
    filter.correlation_id = args.string("correlation_id")?;
    let page = client.list(&filter).await?;
    match page.undecodable.first() {
        Some(bad) => Err(StepError::Scenario(format!("a listed row does not decode: {bad}"))),
        None => to_json(&page.tasks),
    }
}

async fn retry(client: &CairnQ, args: &Args, by: &'static str) -> Result<Value, StepError> {
    let selector = args.required(by, Args::string)?;
    let retry = if by == "key" { client.retry_by_key(&selector) } else { client.retry(&selector) };
    let retry = if args.bool_or("reset_attempt", false)? { retry.reset_attempt() } else { retry };
    to_json(&retry.await?)
}

async fn purge(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let mut filter = PurgeFilter::new()
        .older_than(Duration::from_millis(args.sized_or("older_than_ms", 0)?))
        .limit(args.sized_or("limit", 1000)?);
    filter.queue = args.string("queue")?;
    filter.status = parse::<TaskStatus>(args.string("status")?)?;
    filter.name = args.string("name")?;
    to_json(&client.purge(&filter).await?)
}

async fn queue_depth(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let queue = args.string("queue")?.unwrap_or_else(|| DEFAULT_QUEUE.to_string());
    let max_depth = args.required("max_depth", Args::int)?;
    let max_depth = u64::try_from(max_depth).map_err(|_| Error::validation("max_depth", "must not be negative"))?;
    to_json(&client.queue_depth(&queue, max_depth).await?)
}

/// The lease holder a worker op of a scenario speaks as: its `worker_id`
/// and `lease_ms` (both checked here, as a worker's session checks them).
fn session(client: &CairnQ, worker_id: String, args: &Args) -> Result<WorkerSession, StepError> {
    let lease_ms = args.int_or("lease_ms", DEFAULT_LEASE_MS)?;
    // A negative lease has no Duration: the type refuses it, as the
    // session refuses a zero one.
    let lease =
        u64::try_from(lease_ms).map_err(|_| Error::validation("lease_ms", format!("{lease_ms} is negative")))?;
    Ok(client.worker_session(worker_id, Duration::from_millis(lease))?)
}

async fn claim(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let queues = args.strings("queues")?.unwrap_or_else(|| vec![DEFAULT_QUEUE.to_string()]);
    let worker_id = args.string("worker_id")?.unwrap_or_else(new_worker_id);
    let limit = args.int_or("limit", 1)?;
    let limit = u32::try_from(limit).map_err(|_| Error::validation("limit", format!("{limit} is not a count")))?;
    let draw = ClaimDraw::new(queues).limit(limit);
    let draw = match args.strings("names")? {
        Some(names) => draw.names(names),
        None => draw,
    };
    to_json(&session(client, worker_id, args)?.claim(vec![draw], Vec::new()).await?)
}

/// The task of an op about one attempt, and the session of its worker.
fn owner(client: &CairnQ, args: &Args) -> Result<(String, WorkerSession), StepError> {
    let id = args.required("id", Args::string)?;
    Ok((id, session(client, args.required("worker_id", Args::string)?, args)?))
}

async fn heartbeat(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let (id, session) = owner(client, args)?;
    to_json(&session.heartbeat(&id).await?)
}

async fn heartbeat_batch(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let ids = args.required("ids", Args::strings)?;
    let session = session(client, args.required("worker_id", Args::string)?, args)?;
    let held = session.heartbeat_batch(ids).await?;
    Ok(held.iter().map(|lease| json!({"id": lease.id, "cancel_requested": lease.cancel_requested()})).collect())
}

async fn progress(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let (id, session) = owner(client, args)?;
    let message = args.string("message")?;
    to_json(&session.progress(&id, args.float("progress")?, message.as_deref()).await?)
}

/// `succeed` (the raw primitive) or `complete` (a pending cancel wins).
async fn settle(client: &CairnQ, args: &Args, raw: bool) -> Result<Value, StepError> {
    let (id, session) = owner(client, args)?;
    let result = args.value_or("result", Value::Null);
    let task = if raw { session.succeed(&id, result).await? } else { session.complete(&id, result).await? };
    to_json(&task)
}

async fn fail(client: &CairnQ, args: &Args) -> Result<Value, StepError> {
    let (id, session) = owner(client, args)?;
    let error = args.required("error", Args::json)?;
    let delay_ms = args.int_or("delay_ms", 0)?;
    let delay =
        u64::try_from(delay_ms).map_err(|_| Error::validation("delay_ms", format!("{delay_ms} is negative")))?;
    let retry_after = args.bool_or("retryable", true)?.then_some(Duration::from_millis(delay));
    to_json(&session.fail(&id, error, retry_after).await?)
}

async fn sleep(args: &Args) -> Result<Value, StepError> {
    let ms = args.required("ms", Args::int)?;
    let ms = u64::try_from(ms).map_err(|_| Error::validation("ms", format!("{ms} is negative")))?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(Value::Null)
}
