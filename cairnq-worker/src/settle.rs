//! The one place a task is settled, whoever asks: the handler early
//! through its context, or the call when the handler returns. So "exactly
//! once", "never after the lease is lost" and "stop renewing once settled"
//! hold on every path. Completions share writes through the completion
//! queue; failures, rarer and each with its own backoff, are written alone.

use std::time::Duration;

use cairnq_core::backend::lost_lease;
use cairnq_core::store::FanOut;
use cairnq_core::{Error, Json, MAX_DELAY, Result, Task, TaskStatus, codes};

use crate::issue::Phase;
use crate::retries::with_transient_retries;
use crate::shared::Shared;
use crate::state::TaskState;
use crate::task_error::TaskError;

/// How a task ends its attempt.
#[derive(Debug, Clone)]
pub(crate) enum Settlement {
    /// `complete` with this result (cancel wins).
    Complete(Json),
    /// `fail` with this error (retryable ones get a backoff delay).
    Fail(TaskError),
}

/// What a settle write answers: the status it left the row in, and the
/// envelope of a failure it wrote (the settled event names its code).
pub(crate) trait Written {
    fn status(&self) -> TaskStatus;
    fn error(&self) -> Option<&Json>;
}

impl Written for Task {
    fn status(&self) -> TaskStatus {
        self.status
    }

    fn error(&self) -> Option<&Json> {
        self.error.as_ref()
    }
}

impl Written for FanOut {
    fn status(&self) -> TaskStatus {
        self.task.status
    }

    fn error(&self) -> Option<&Json> {
        None
    }
}

/// What the completion path wrote: the status it left (a completion
/// shared with others' answers no more), and the envelope of a failure.
struct Wrote {
    status: TaskStatus,
    error: Option<Json>,
}

impl From<Task> for Wrote {
    fn from(row: Task) -> Self {
        Self { status: row.status, error: row.error }
    }
}

impl Written for Wrote {
    fn status(&self) -> TaskStatus {
        self.status
    }

    fn error(&self) -> Option<&Json> {
        self.error.as_ref()
    }
}

impl Shared {
    /// Settles `task` once: `Ok(None)` when it was already settled,
    /// [`Error::LostLease`] when its lease is gone (nothing is written).
    pub(crate) async fn settle(&self, task: &Task, state: &TaskState, how: Settlement) -> Result<Option<Task>> {
        if !self.may_settle(task, state)? {
            return Ok(None);
        }
        self.write_once(task, state, how).await.map(Some)
    }

    /// Settles `task` once through `write`, which the handler runs in its
    /// own transaction (`succeed_in`, `succeed_with`): the same claim as
    /// [`settle`](Self::settle). Written: the task counts as settled, and
    /// its lease leaves the heartbeat at once (on Postgres a renewal would
    /// wait for the row the application's transaction holds). Lost lease:
    /// marked and reported once. Any other error wrote nothing, so the
    /// claim is given back and the handler's return settles as usual.
    pub(crate) async fn settle_by<T: Written>(
        &self,
        task: &Task,
        state: &TaskState,
        write: impl std::future::Future<Output = Result<T>>,
    ) -> Result<Option<T>> {
        if !self.may_settle(task, state)? {
            return Ok(None);
        }
        match write.await {
            Err(error) if !matches!(error, Error::LostLease { .. }) => {
                state.give_back_settle();
                Err(error)
            }
            written => self.finish_write(task, state, written).map(Some),
        }
    }

    /// Claims the right to write `task`'s settlement: `Ok(false)` when it
    /// was settled already, [`Error::LostLease`] when its lease is gone.
    fn may_settle(&self, task: &Task, state: &TaskState) -> Result<bool> {
        if state.is_lost() {
            return Err(lost_lease(&task.id, &self.worker_id));
        }
        Ok(state.begin_settle())
    }

    /// Settles what the call's outcome says, reporting failures the loop
    /// survives (a lost lease is expected and not reported).
    ///
    /// Completions share writes with other calls' (see [`CompletionQueue`]);
    /// failures, rarer and each with its own backoff, are written alone.
    pub(crate) async fn settle_outcome(&self, task: &Task, state: &TaskState, how: Settlement) {
        if !matches!(self.may_settle(task, state), Ok(true)) {
            return;
        }
        let written = match how {
            Settlement::Complete(result) => {
                let completed = self.completions.call((task.id.clone(), result)).await;
                let completed = completed.map(|status| Wrote { status, error: None });
                self.fail_if_refused(task, completed, Wrote::from).await
            }
            Settlement::Fail(_) => self.write_settlement(task, &how).await.map(Wrote::from),
        };
        self.reported(state, self.finish_write(task, state, written));
    }

    /// Gives up an attempt that outran `max_run`: the context reads as
    /// lease-lost before the failure is written (so whoever sees the row
    /// failed also sees the attempt abandoned), unless it settled already.
    pub(crate) async fn abandon(&self, task: &Task, state: &TaskState, error: TaskError) {
        let settling = state.begin_settle();
        state.mark_lost();
        if settling {
            self.reported(state, self.write_once(task, state, Settlement::Fail(error)).await);
        }
    }

    fn reported<T>(&self, state: &TaskState, written: Result<T>) {
        match written {
            // A lost lease is an answer from a working store.
            Ok(_) | Err(Error::LostLease { .. }) => self.store_ok(),
            Err(error) => self.store_failed(Phase::Settle, Some(&state.attempt), error),
        }
    }

    /// The write of a settlement this caller won the right to make.
    async fn write_once(&self, task: &Task, state: &TaskState, how: Settlement) -> Result<Task> {
        // The lease stays on the heartbeat's list until the write is done:
        // a settle queued behind many others (a large batch) must not lose
        // its lease while it waits.
        let written = self.write_settlement(task, &how).await;
        let written = self.fail_if_refused(task, written, std::convert::identity).await;
        self.finish_write(task, state, written)
    }

    /// A result the store refuses to hold (Postgres jsonb cannot store
    /// `\u0000`) would leave the task running until its lease expired and
    /// then rerun it into the same refusal. Running it again cannot help, so
    /// the attempt fails for good instead, naming the store's reason.
    async fn fail_if_refused<T>(&self, task: &Task, written: Result<T>, when_failed: fn(Task) -> T) -> Result<T> {
        let Err(Error::Serialization(reason)) = written else { return written };
        let error = TaskError::new(format!("the store refused the handler's result: {reason}"))
            .code(codes::UNSERIALIZABLE_RESULT)
            .error_type("SerializationError");
        self.write_settlement(task, &Settlement::Fail(error)).await.map(when_failed)
    }

    /// After a settle write: stop renewing the lease; count the outcome; a
    /// lost lease marks the attempt lost.
    fn finish_write<T: Written>(&self, task: &Task, state: &TaskState, written: Result<T>) -> Result<T> {
        self.leases.remove(&task.id, state);
        match &written {
            Ok(row) => state.attempt.settled_as(row.status(), row.error()),
            Err(Error::LostLease { .. }) => self.lease_lost(state),
            Err(_) => {}
        }
        written
    }

    async fn write_settlement(&self, task: &Task, how: &Settlement) -> Result<Task> {
        with_transient_retries(|| async {
            match how {
                Settlement::Complete(result) => self.session.complete(&task.id, result.clone()).await,
                Settlement::Fail(error) => {
                    self.session.fail(&task.id, error.envelope().to_json(), self.retry_after(task, error)).await
                }
            }
        })
        .await
    }

    /// When a failed attempt runs again: after the backoff for a
    /// retryable error, never for another.
    fn retry_after(&self, task: &Task, error: &TaskError) -> Option<Duration> {
        // A backoff cap past what a run_at can hold waits as long as one can.
        error.is_retryable().then(|| self.options.backoff.delay(task.attempt).min(MAX_DELAY))
    }
}
