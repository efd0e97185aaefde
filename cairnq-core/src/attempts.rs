//! What a task row tells about how its attempts ended, from the columns
//! the protocol keeps (PROTOCOL.md); no SDK records an attempt history.
//!
//! A worker that dies (killed, out of memory, its host gone) writes
//! nothing: its lease runs out, and the next claim's lease recovery puts
//! the task back in the queue, clearing the worker and leaving the `error`
//! column as it was. The trace that leaves is an attempt that ended with no
//! failure recorded, which [`Task::lease_lost_attempt`] reads back.

use crate::envelope::codes;
use crate::model::{Task, TaskStatus};

impl Task {
    /// The attempt that, as far as the row tells, ended because its lease
    /// expired (its worker died or stalled) rather than by the handler's
    /// own success or failure; `None` when the row shows no such attempt.
    ///
    /// The rule, from what the protocol writes:
    /// - every claim adds one to `attempt`; `fail` records an error
    ///   envelope on every branch; `succeed` and `complete` leave `error`
    ///   alone; lease recovery records nothing when it requeues the task
    ///   (attempts left) and the `lease_expired` envelope when it fails it
    ///   (none left);
    /// - so a `lease_expired` error means the last attempt (`attempt`) was
    ///   lost, attempts used up;
    /// - and a row with no error whose last ended attempt is known (a
    ///   queued task: `attempt`, all its claims have ended; a running,
    ///   succeeded or canceled one: `attempt - 1`, the one before the
    ///   current or final one) lost that attempt: nothing but lease
    ///   recovery ends an attempt without recording an error, and recovery
    ///   requeues only below `max_attempts`, so the attempt must be below it.
    ///
    /// Only the most recent ended attempt can be read: once one failed, its
    /// error stays until the next failure, so a later lost attempt leaves no
    /// trace. And an operator's `retry` (without resetting the attempt) of a
    /// canceled task or one failed before its attempts ran out clears the
    /// error too, leaving the same row as a lost lease.
    ///
    /// ```
    /// # use cairnq_core::{Task, TaskStatus};
    /// # fn demo(task: &Task) {
    /// // A worker claimed the task (attempt 1) and was killed; recovery
    /// // put it back in the queue.
    /// if task.status == TaskStatus::Queued && task.attempt == 1 && task.error.is_none() {
    ///     assert_eq!(task.lease_lost_attempt(), Some(1));
    /// }
    /// # }
    /// ```
    pub fn lease_lost_attempt(&self) -> Option<u32> {
        if let Some(error) = self.error_envelope() {
            return (error.code == codes::LEASE_EXPIRED).then_some(self.attempt);
        }
        if self.error.is_some() {
            return None;
        }
        let last_ended = match self.status {
            TaskStatus::Queued => self.attempt,
            TaskStatus::Running | TaskStatus::Succeeded | TaskStatus::Canceled => self.attempt.saturating_sub(1),
            TaskStatus::Failed => return None,
        };
        (last_ended >= 1 && last_ended < self.max_attempts).then_some(last_ended)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::envelope::ErrorEnvelope;
    use crate::json::Json;

    fn task(status: TaskStatus, attempt: u32, error: Option<ErrorEnvelope>) -> Task {
        Task {
            id: "task_1".into(),
            name: "n".into(),
            queue: "default".into(),
            status,
            payload: Json::from(json!({})),
            result: None,
            error: error.map(|e| e.to_json()),
            metadata: Json::from(json!({})),
            progress: None,
            message: None,
            attempt,
            max_attempts: 3,
            priority: 0,
            worker_id: None,
            lease_until_ms: None,
            run_at_ms: 0,
            cancel_requested_at_ms: None,
            parent_id: None,
            root_id: None,
            correlation_id: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            completed_at_ms: None,
        }
    }

    /// [`Task::error_message`] (model.rs) on the rows built here.
    #[test]
    fn the_error_message_is_the_envelopes_text_not_its_json() {
        let failed = task(TaskStatus::Failed, 1, Some(ErrorEnvelope::new("disk_full", "no space left on /var")));
        assert_eq!(failed.error_message().as_deref(), Some("no space left on /var"));
        let mut foreign = task(TaskStatus::Failed, 1, None);
        foreign.error = Some(Json::from(json!(["not", "an envelope"])));
        assert_eq!(foreign.error_message().as_deref(), Some(r#"["not","an envelope"]"#));
        assert_eq!(task(TaskStatus::Queued, 0, None).error_message(), None);
    }

    #[test]
    fn an_attempt_that_ended_without_an_error_was_lost_to_its_lease() {
        use TaskStatus::*;
        let failure = || Some(ErrorEnvelope::retryable("handler_error", "boom"));
        let cases = [
            (task(Queued, 0, None), None, "never claimed"),
            (task(Queued, 1, None), Some(1), "requeued by lease recovery"),
            (task(Queued, 1, failure()), None, "requeued by a failure"),
            (task(Running, 1, None), None, "the first attempt runs"),
            (task(Running, 2, None), Some(1), "the first attempt was lost, the second runs"),
            (task(Running, 2, failure()), None, "the first attempt failed"),
            (task(Succeeded, 2, None), Some(1), "lost, then succeeded"),
            (task(Succeeded, 1, None), None, "succeeded at once"),
            (task(Failed, 3, Some(ErrorEnvelope::lease_expired())), Some(3), "lost the last one"),
            (task(Failed, 1, failure()), None, "failed"),
            (task(Queued, 3, None), None, "retried by hand after its attempts ran out"),
            (task(Running, 4, None), None, "retried by hand, claimed again"),
        ];
        for (task, lost, what) in cases {
            assert_eq!(task.lease_lost_attempt(), lost, "{what}");
        }
    }
}
