//! Durable steps through the client's two doors: [`CairnQ::steps`] reads
//! a task's stored steps (for people: `cairnq get`, the dashboard), and
//! [`WorkerSession`] reads and stores them for the attempt holding the
//! task's lease (the worker's `ctx.step`).

use super::{CairnQ, WorkerSession};
use crate::envelope::ErrorEnvelope;
use crate::error::{Error, Result, require_non_empty, require_text};
use crate::json::Json;
use crate::step::Step;
use crate::store::{SaveStepParams, StepStore, StepsParams};

impl CairnQ {
    /// The steps `task_id` stored, in the order they were stored: none for
    /// a task without steps or without a row, and none where the store
    /// keeps no steps (a database without extension `ext_0009_steps`, or a
    /// backend without them), so showing a task never fails for them.
    ///
    /// ```
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// for step in client.steps("task_01J0000000000000000000000").await? {
    ///     println!("{} (attempt {}): {:?}", step.name, step.attempt, step.result);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn steps(&self, task_id: &str) -> Result<Vec<Step>> {
        require_text("task_id", task_id)?;
        let Some(steps) = self.store.step_store() else { return Ok(Vec::new()) };
        match steps.steps(&StepsParams::new(task_id)).await {
            Err(Error::UnsupportedBackend { .. }) => Ok(Vec::new()),
            read => read,
        }
    }
}

impl WorkerSession {
    /// The steps a task this session holds stored in earlier attempts (or
    /// this one). [`Error::UnsupportedBackend`] where the store keeps no
    /// steps.
    pub async fn steps(&self, task_id: &str) -> Result<Vec<Step>> {
        require_text("task_id", task_id)?;
        self.step_store()?.steps(&StepsParams::new(task_id)).await
    }

    /// Stores a step of attempt `attempt` of a task this session holds:
    /// its value, or the envelope of a permanent failure. One
    /// ownership-checked write: [`Error::LostLease`] (nothing written) once
    /// the attempt no longer holds the lease.
    pub async fn save_step(
        &self,
        task_id: &str,
        attempt: u32,
        name: &str,
        outcome: std::result::Result<Json, &ErrorEnvelope>,
    ) -> Result<Step> {
        require_text("task_id", task_id)?;
        require_non_empty("name", name)?;
        require_text("name", name)?;
        let params = SaveStepParams::new(task_id, self.worker_id()).attempt(attempt).name(name);
        let params = match outcome {
            Ok(result) => params.result(result),
            Err(envelope) => params.error(Json::encode(envelope)?),
        };
        self.step_store()?.save_step(&params).await
    }

    fn step_store(&self) -> Result<&dyn StepStore> {
        let store = &self.client().store;
        store.step_store().ok_or(Error::UnsupportedBackend { operation: "steps", backend: store.backend() })
    }
}
