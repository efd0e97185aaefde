//! [`StepStore`]: durable steps (extension `ext_0009_steps`) as a
//! capability of a store ([`Store::step_store`](super::Store::step_store)),
//! so a backend without them writes nothing for them.

use async_trait::async_trait;

use super::{SaveStepParams, StepsParams};
use crate::error::Result;
use crate::step::Step;

/// The step operations of a store that keeps durable steps. A task's steps
/// are deleted with the task (whichever SDK purges it).
///
/// ```
/// use cairnq_core::store::{StepsParams, Store};
///
/// /// How many steps a task stored (none where the store keeps none).
/// async fn how_many(store: &dyn Store, task_id: &str) -> cairnq_core::Result<usize> {
///     match store.step_store() {
///         Some(steps) => Ok(steps.steps(&StepsParams::new(task_id)).await?.len()),
///         None => Ok(0),
///     }
/// }
/// ```
#[async_trait]
pub trait StepStore: Send + Sync {
    /// The task's steps in the order they were stored (none for a task
    /// without steps, or without a row).
    /// [`Error::UnsupportedBackend`](crate::Error::UnsupportedBackend)
    /// where the database turns out to have no steps table (an
    /// installation another SDK made, opened without migrating).
    async fn steps(&self, params: &StepsParams) -> Result<Vec<Step>>;

    /// Stores one step (a name stored before is replaced) in one
    /// ownership-checked write; the row as stored.
    /// [`Error::LostLease`](crate::Error::LostLease) when the attempt no
    /// longer holds the task's lease, and nothing is written.
    async fn save_step(&self, params: &SaveStepParams) -> Result<Step>;
}
