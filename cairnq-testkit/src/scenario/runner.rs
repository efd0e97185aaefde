//! Runs one scenario: a fresh store, then each step in order — resolve its
//! references, run its op, match an expected error, check its assertions,
//! save its value — stopping at the first step that fails.

use std::time::Duration;

use cairnq_core::CairnQ;
use serde_json::{Value, json};

use super::args::StepError;
use super::assertions::Assertions;
use super::file::{Scenario, Step};
use super::ops;
use super::refs::Bindings;
use super::report::Outcome;
use crate::BackendFactory;

/// A step that takes longer than this is reported instead of hanging the suite.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `scenario` against a fresh store from `factory`.
pub(crate) async fn run_scenario(factory: &dyn BackendFactory, scenario: &Scenario) -> Outcome {
    let failure = match factory.fresh().await {
        Err(e) => Some(format!("cannot make a fresh {} store: {e}", factory.name())),
        Ok(fresh) => {
            let client = CairnQ::from_shared(fresh.store);
            let ran = run_steps(&client, scenario).await;
            let closed = client.close().await.map_err(|e| format!("closing the store failed: {e}"));
            ran.and(closed).err()
        }
    };
    Outcome::new(scenario.name.clone(), failure)
}

async fn run_steps(client: &CairnQ, scenario: &Scenario) -> Result<(), String> {
    let mut bindings = Bindings::default();
    for (index, step) in scenario.steps.iter().enumerate() {
        run_step(client, &mut bindings, step).await.map_err(|e| format!("steps[{index}] ({}): {e}", step.op))?;
    }
    Ok(())
}

async fn run_step(client: &CairnQ, bindings: &mut Bindings, step: &Step) -> Result<(), String> {
    let assertions = Assertions::from_value(bindings.resolve(&step.assertions())?)?;
    let outcome = if step.op == "expect" {
        let target = step.target.as_ref().ok_or("an expect step needs a `target`")?;
        Ok(bindings.resolve(target)?)
    } else {
        let args = bindings.resolve(step.args.as_ref().unwrap_or(&Value::Null))?;
        execute(client, &step.op, args).await
    };
    let value = settle(outcome, step.expect_error.as_deref())?;
    assertions.check(&value)?;
    if let Some(alias) = &step.save {
        bindings.save(alias, value);
    }
    Ok(())
}

async fn execute(client: &CairnQ, op: &str, args: Value) -> Result<Value, StepError> {
    let timed_out = || StepError::Scenario(format!("did not finish within {} s", STEP_TIMEOUT.as_secs()));
    tokio::time::timeout(STEP_TIMEOUT, ops::run(client, op, args)).await.unwrap_or_else(|_| Err(timed_out()))
}

/// The step's value: its result, or `{task_id, type}` for the error it was
/// expected to fail with.
fn settle(outcome: Result<Value, StepError>, expected: Option<&str>) -> Result<Value, String> {
    match (outcome, expected) {
        (Ok(value), None) => Ok(value),
        (Ok(value), Some(kind)) => Err(format!("expectError {kind}: the step succeeded with {value}")),
        (Err(StepError::Scenario(why)), _) => Err(why),
        (Err(StepError::Cairnq(e)), None) => Err(format!("failed with {}: {e}", e.kind().as_str())),
        (Err(StepError::Cairnq(e)), Some(kind)) if e.kind().as_str() == kind => {
            Ok(json!({"task_id": e.task_id(), "type": kind}))
        }
        (Err(StepError::Cairnq(e)), Some(kind)) => {
            Err(format!("expectError {kind}: failed with {} instead: {e}", e.kind().as_str()))
        }
    }
}
