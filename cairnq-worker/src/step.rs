//! Durable steps: [`TaskContext::step`] runs a piece of a handler once per
//! task across attempts. What the piece returned is stored (extension
//! `ext_0009_steps`, one ownership-checked write) before the step returns,
//! so an attempt after a crash, a lost lease or a retryable failure reads
//! it back instead of running it again: the charge is made once, the
//! email sent once, however often the handler around them starts over.
//!
//! Only what cannot change by trying again is stored: a value, or a
//! permanent failure ([`TaskError::new`]). A retryable failure is not, so
//! the next attempt runs the step again. A store that keeps no steps
//! refuses a step rather than run it without the promise.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use cairnq_core::backend::lost_lease;
use cairnq_core::{Error, ErrorEnvelope, Json, Step, codes, step_name};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::TaskContext;
use crate::task_error::TaskError;

/// Why [`TaskContext::step`] gave no value. A handler returning
/// `Result<_, TaskError>` passes it on with `?`.
#[derive(Debug)]
#[non_exhaustive]
pub enum StepFailure {
    /// The step failed: now (a retryable failure, not stored, so the next
    /// attempt runs the step again; or a permanent one, now stored), or
    /// permanently in an earlier attempt (the stored error, returned
    /// without running the step).
    Failed(TaskError),
    /// The step was refused or could not be stored:
    /// [`Error::LostLease`] once this attempt no longer holds the task
    /// (nothing is stored; another attempt runs the step), a validation
    /// error for a bad name, [`Error::UnsupportedBackend`] where the store
    /// keeps no steps, or a store failure. A value the step computed but
    /// could not store is lost, and a later attempt runs the step again.
    Store(Error),
}

impl StepFailure {
    /// Whether the step was refused because the attempt lost its lease.
    pub fn is_lost_lease(&self) -> bool {
        matches!(self, Self::Store(Error::LostLease { .. }))
    }
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(error) => write!(f, "step failed: {error}"),
            Self::Store(error) => write!(f, "step not stored: {error}"),
        }
    }
}

impl From<StepFailure> for TaskError {
    fn from(failure: StepFailure) -> Self {
        match failure {
            StepFailure::Failed(error) => error,
            StepFailure::Store(error) => error.into(),
        }
    }
}

impl TaskContext {
    /// Runs `run` once per task, across attempts: its value is stored
    /// before this returns, and a later attempt of the same task gets the
    /// stored value (decoded into `T`) without running `run` again. The
    /// `n`-th use of one name within an attempt is stored as `name#n`, so
    /// steps in a loop each keep their own value, as long as every
    /// attempt runs them in the same order.
    ///
    /// A failure becomes [`StepFailure::Failed`]. A retryable one (any
    /// `std::error::Error`, [`TaskError::retryable`]) is not stored: the
    /// next attempt runs the step again. A permanent one
    /// ([`TaskError::new`]) is stored, and later attempts get it back
    /// without running the step. The step is written only while this
    /// attempt holds the task's lease; once it is lost the step is refused
    /// with [`Error::LostLease`] ([`StepFailure::Store`]). A step whose
    /// value cannot be stored runs again in the next attempt: a step is
    /// run at least once and, once stored, never again.
    ///
    /// Names may not be empty or hold `#` (kept for the numbering).
    ///
    /// ```no_run
    /// use cairnq_worker::{TaskContext, TaskError};
    ///
    /// async fn checkout(ctx: TaskContext, cents: u64) -> Result<String, TaskError> {
    ///     let charge: String = ctx.step("charge", || async move {
    ///         Ok::<_, TaskError>(format!("ch_{cents}")) // call the payment provider here
    ///     }).await?;
    ///     for line in 0..3 {
    ///         // Stored as "ship", "ship#2", "ship#3".
    ///         ctx.step("ship", || async move { Ok::<_, TaskError>(line) }).await?;
    ///     }
    ///     Ok(charge)
    /// }
    /// ```
    pub async fn step<T, E, F, Fut>(&self, name: &str, run: F) -> Result<T, StepFailure>
    where
        T: Serialize + DeserializeOwned,
        E: Into<TaskError>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        step_name(name).map_err(StepFailure::Store)?;
        let stored_name = self.steps().next_name(name);
        self.step_lease()?;
        let stored = self.stored_steps().await?;
        if let Some(step) = stored.get(&stored_name) {
            return replay(step);
        }
        match run().await {
            Ok(value) => {
                let json = Json::encode(&value).map_err(|e| {
                    let why = format!("step {stored_name}: its value cannot be stored: {e}");
                    StepFailure::Failed(TaskError::new(why).code(codes::UNSERIALIZABLE_RESULT))
                })?;
                self.save(&stored_name, Ok(json)).await?;
                Ok(value)
            }
            Err(error) => {
                let error: TaskError = error.into();
                if !error.is_retryable() {
                    self.save(&stored_name, Err(error.envelope())).await?;
                }
                Err(StepFailure::Failed(error))
            }
        }
    }

    /// `LostLease` once this attempt is known to have lost the task.
    fn step_lease(&self) -> Result<(), StepFailure> {
        if self.lost_lease() {
            return Err(StepFailure::Store(lost_lease(self.task_id(), self.worker_id())));
        }
        Ok(())
    }

    /// The steps earlier attempts stored, read at this attempt's first step.
    async fn stored_steps(&self) -> Result<&HashMap<String, Step>, StepFailure> {
        let read = || async {
            let steps = self.core().session.steps(self.task_id()).await?;
            Ok::<_, Error>(steps.into_iter().map(|s| (s.name.clone(), s)).collect())
        };
        self.steps().stored().get_or_try_init(read).await.map_err(StepFailure::Store)
    }

    /// Stores the step under this attempt's lease; a lost lease is
    /// remembered as every ownership-checked write of the attempt does.
    async fn save(&self, name: &str, outcome: Result<Json, &ErrorEnvelope>) -> Result<(), StepFailure> {
        let saved = self.core().session.save_step(self.task_id(), self.attempt(), name, outcome).await;
        match saved {
            Ok(_) => Ok(()),
            Err(error) => {
                if matches!(error, Error::LostLease { .. }) {
                    self.core().lease_lost(self.state());
                }
                Err(StepFailure::Store(error))
            }
        }
    }
}

/// A step stored before: its value decoded, or its permanent error.
fn replay<T: DeserializeOwned>(step: &Step) -> Result<T, StepFailure> {
    if let Some(envelope) = &step.error {
        return Err(StepFailure::Failed(TaskError::from_envelope(envelope.clone())));
    }
    let value = step.result.clone().unwrap_or_else(Json::null);
    // A stored value that no longer decodes (the step's type changed
    // between attempts) cannot decode in any later attempt either.
    value.decode().map_err(|e| {
        let why = format!("step {}: the stored value does not decode: {e}", step.name);
        StepFailure::Failed(TaskError::new(why).code("step_value_mismatch"))
    })
}
