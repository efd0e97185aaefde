//! Durable steps (extension `ext_0009_steps`) on the memory store: the
//! rows live in the tables beside their tasks, so a purge deletes them
//! with the task and a failed operation undoes them with the rest, and a
//! step is stored under the same ownership check as every worker write.

use async_trait::async_trait;
use cairnq_core::backend::lost_lease;
use cairnq_core::store::{SaveStepParams, StepStore, StepsParams};
use cairnq_core::{ErrorEnvelope, Result, Step};

use super::MemoryStore;
use super::worker_ops::owns;

#[async_trait]
impl StepStore for MemoryStore {
    async fn steps(&self, params: &StepsParams) -> Result<Vec<Step>> {
        self.read(|tables, _| Ok(tables.steps(&params.task_id).to_vec()))
    }

    async fn save_step(&self, p: &SaveStepParams) -> Result<Step> {
        let error = p.error.as_ref().map(|e| e.decode::<ErrorEnvelope>()).transpose()?;
        self.write(|txn| {
            let held = txn.tables().task(&p.task_id).is_some_and(|t| owns(t, &p.worker_id, txn.now_ms));
            if !held || txn.tables().task(&p.task_id).map(|t| t.attempt) != Some(p.attempt) {
                return Err(lost_lease(&p.task_id, &p.worker_id));
            }
            let step = Step {
                task_id: p.task_id.clone(),
                name: p.name.clone(),
                attempt: p.attempt,
                result: if error.is_some() { None } else { p.result.clone() },
                error,
                created_at_ms: txn.now_ms,
            };
            txn.save_step(step.clone());
            Ok(step)
        })
    }
}
