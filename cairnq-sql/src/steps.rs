//! The durable-steps operations of the seam ([`StepStore`](cairnq_core::store::StepStore))
//! written once over an [`Executor`]: each statement returns a step row as
//! one JSON object in a text column, decoded here, as limit rows are,
//! so a backend needs no new row mapping.

use cairnq_core::backend::lost_lease;
use cairnq_core::store::{SaveStepParams, StepsParams};
use cairnq_core::{Error, ErrorEnvelope, Json, Result, Step};
use cairnq_protocol::Sql;
use serde::Deserialize;

use crate::flows::Executor;
use crate::query::Query;

/// The table of extension `ext_0009_steps`: a database another SDK
/// installed may lack it (backends look for it before they offer steps).
pub const STEPS_TABLE: &str = "cairnq_ext_steps";

/// A step row as its statements return it: `result` and `error` are the
/// stored JSON as text (null for SQL NULL).
#[derive(Deserialize)]
struct StoredStep {
    task_id: String,
    name: String,
    attempt: i64,
    result: Option<String>,
    error: Option<String>,
    created_at_ms: i64,
}

/// A task's steps, in the order they were stored.
pub async fn steps(exec: &impl Executor, params: &StepsParams) -> Result<Vec<Step>> {
    let rows = exec.rows::<String>(Query::new(Sql::SelectSteps).arg("task_id", &params.task_id)).await?;
    rows.iter().map(|text| decode_step(text)).collect()
}

/// Stores one step under the attempt's lease; the row as stored, or
/// [`Error::LostLease`] when the ownership check matched nothing.
pub async fn save_step(exec: &impl Executor, params: &SaveStepParams) -> Result<Step> {
    let q = Query::new(Sql::SaveStep)
        .arg("task_id", &params.task_id)
        .arg("worker_id", &params.worker_id)
        .arg("attempt", i64::from(params.attempt))
        .arg("name", &params.name)
        .arg("result", params.result.as_ref())
        .arg("error", params.error.as_ref());
    match exec.rows::<String>(q).await?.first() {
        Some(text) => decode_step(text),
        None => Err(lost_lease(&params.task_id, &params.worker_id)),
    }
}

/// A step row from its JSON object (column name -> value).
pub fn decode_step(text: &str) -> Result<Step> {
    let bad = |why: String| Error::corrupt_row(format!("a step row: {why}"));
    let s: StoredStep = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let result = s.result.map(Json::parse).transpose().map_err(|e| bad(format!("result: {e}")))?;
    let error = match s.error {
        Some(text) => Some(serde_json::from_str::<ErrorEnvelope>(&text).map_err(|e| bad(format!("error: {e}")))?),
        None => None,
    };
    if result.is_none() && error.is_none() {
        return Err(bad(format!("step {:?} holds neither a result nor an error", s.name)));
    }
    let attempt = u32::try_from(s.attempt).map_err(|_| bad(format!("attempt {} is out of range", s.attempt)))?;
    Ok(Step { task_id: s.task_id, name: s.name, attempt, result, error, created_at_ms: s.created_at_ms })
}
