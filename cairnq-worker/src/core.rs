//! What every part of a running worker shares — the client, the options, the
//! leases the heartbeat renews, the load — and the one place a task is
//! settled.
//!
//! Settling goes through [`WorkerCore::settle`] whoever asks (the handler
//! early through its context, or the call when the handler returns), so
//! "exactly once", "never after the lease is lost" and "stop renewing once
//! settled" hold on every path.
//!
//! Every store call of the loop (probe, claim, heartbeat, settle) reports
//! its outcome here too ([`WorkerCore::store_ok`],
//! [`WorkerCore::store_failed`]): an error waiting will not heal is
//! reported once per outage and, under [`OnUnusable::Stop`], stops the
//! worker and becomes what `Worker::run` returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cairnq_core::backend::lost_lease;
use cairnq_core::store::{FailParams, SettleParams};
use cairnq_core::{Backoff, CairnQ, Error, Json, Result, Task};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::completions::{CompletionQueue, completion_queue};
use crate::options::{OnError, OnUnusable, WorkerIssue, WorkerOptions};
use crate::state::{Leases, Load, TaskState};
use crate::task_error::TaskError;

/// Attempts of one settle write when the store reports a transient error,
/// and their pauses: equal jitter, doubling from 100 ms (50-100 ms, then
/// 100-200 ms), so writers that all hit one hiccup do not retry in step.
const SETTLE_TRIES: u32 = 3;

fn settle_retry_pause(tries: u32) -> Duration {
    Duration::from_millis(Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).delay_ms(tries))
}

/// How a task ends its attempt.
#[derive(Debug, Clone)]
pub(crate) enum Settlement {
    /// `complete` with this result (cancel wins).
    Complete(Json),
    /// `fail` with this error (retryable ones get a backoff delay).
    Fail(TaskError),
}

pub(crate) struct WorkerCore {
    pub(crate) client: CairnQ,
    pub(crate) options: WorkerOptions,
    pub(crate) worker_id: String,
    pub(crate) leases: Leases,
    pub(crate) load: Arc<Load>,
    completions: Arc<CompletionQueue>,
    on_error: Option<OnError>,
    /// The worker's stop switch: an unusable database flips it.
    stop: Arc<watch::Sender<bool>>,
    /// The error that stopped the worker, for `Worker::run` to return.
    halted: Mutex<Option<Error>>,
    /// An unusable error was reported since the last successful store call.
    unusable_reported: AtomicBool,
}

impl WorkerCore {
    pub(crate) fn new(client: CairnQ, options: WorkerOptions, stop: Arc<watch::Sender<bool>>) -> Self {
        let worker_id = options.worker_id.clone().unwrap_or_else(cairnq_core::backend::new_worker_id);
        let client = match &options.backpressure {
            Some(settings) => client.with_backpressure(settings.clone()),
            None => client,
        };
        let on_error = options.on_error.clone();
        let completions = completion_queue(client.clone(), worker_id.clone());
        Self {
            client,
            options,
            worker_id,
            leases: Leases::default(),
            load: Arc::default(),
            completions,
            on_error,
            stop,
            halted: Mutex::new(None),
            unusable_reported: AtomicBool::new(false),
        }
    }

    /// Hands an issue to the hook (stderr by default).
    pub(crate) fn report(&self, issue: WorkerIssue) {
        match &self.on_error {
            Some(hook) => hook(issue),
            None => eprintln!("cairnq worker {}: {issue}", self.worker_id),
        }
    }

    /// A store call of the loop succeeded: any outage is over, and the next
    /// unusable error will be reported again.
    pub(crate) fn store_ok(&self) {
        self.unusable_reported.store(false, Ordering::Relaxed);
    }

    /// A store call of the loop failed during `during`. A healable error is
    /// reported as it comes (the callers pace their retries). An unusable
    /// one is reported once until a store call succeeds again and, under
    /// [`OnUnusable::Stop`], stops the worker: claims end, running calls
    /// drain, and `Worker::run` returns the error.
    pub(crate) fn store_failed(&self, during: &'static str, error: Error) {
        if !error.is_unusable() {
            return self.report(WorkerIssue::Store { during, error });
        }
        if self.halted.lock().is_some() || self.unusable_reported.swap(true, Ordering::Relaxed) {
            return;
        }
        let stopping = self.options.on_unusable == OnUnusable::Stop;
        let reported = if stopping {
            // `run` returns the original (with its driver error as source);
            // the hook gets a copy.
            let copy = error.replicate();
            *self.halted.lock() = Some(error);
            copy
        } else {
            error
        };
        self.report(WorkerIssue::Unusable { during, error: reported, stopping });
        if stopping {
            self.stop.send_replace(true);
        }
    }

    /// The lease of `task_id` turned out lost: marks the attempt and reports
    /// it, once per task.
    pub(crate) fn lease_lost(&self, task_id: &str, state: &TaskState) {
        if state.mark_lost() {
            self.report(WorkerIssue::LostLeases { task_ids: vec![task_id.to_string()] });
        }
    }

    /// Whether an unusable database stopped the worker.
    pub(crate) fn is_halted(&self) -> bool {
        self.halted.lock().is_some()
    }

    /// The error that stopped the worker, once.
    pub(crate) fn take_halt(&self) -> Option<Error> {
        self.halted.lock().take()
    }

    /// Settles `task` once: `Ok(None)` when it was already settled,
    /// [`Error::LostLease`] when its lease is gone (nothing is written).
    pub(crate) async fn settle(&self, task: &Task, state: &TaskState, how: Settlement) -> Result<Option<Task>> {
        if !self.may_settle(task, state)? {
            return Ok(None);
        }
        self.write_once(task, state, how).await.map(Some)
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
            Settlement::Complete(result) => self.completions.call((task.id.clone(), result)).await,
            Settlement::Fail(_) => self.write_settlement(task, &how).await.map(drop),
        };
        self.reported(self.finish_write(task, state, written));
    }

    /// Gives up an attempt that outran `max_run`: the context reads as
    /// lease-lost before the failure is written (so whoever sees the row
    /// failed also sees the attempt abandoned), unless it settled already.
    pub(crate) async fn abandon(&self, task: &Task, state: &TaskState, error: TaskError) {
        let settling = state.begin_settle();
        state.mark_lost();
        if settling {
            self.reported(self.write_once(task, state, Settlement::Fail(error)).await);
        }
    }

    fn reported<T>(&self, written: Result<T>) {
        match written {
            // A lost lease is an answer from a working store.
            Ok(_) | Err(Error::LostLease { .. }) => self.store_ok(),
            Err(error) => self.store_failed("settle", error),
        }
    }

    /// The write of a settlement this caller won the right to make.
    async fn write_once(&self, task: &Task, state: &TaskState, how: Settlement) -> Result<Task> {
        // The lease stays on the heartbeat's list until the write is done:
        // a settle queued behind many others (a large batch) must not lose
        // its lease while it waits.
        let written = self.write_settlement(task, &how).await;
        self.finish_write(task, state, written)
    }

    /// After a settle write: stop renewing the lease; a lost lease marks
    /// the attempt lost.
    fn finish_write<T>(&self, task: &Task, state: &TaskState, written: Result<T>) -> Result<T> {
        self.leases.remove(&task.id);
        if matches!(written, Err(Error::LostLease { .. })) {
            self.lease_lost(&task.id, state);
        }
        written
    }

    async fn write_settlement(&self, task: &Task, how: &Settlement) -> Result<Task> {
        with_transient_retries(|| async {
            match how {
                Settlement::Complete(result) => {
                    self.client.complete(&SettleParams::new(&task.id, &self.worker_id).result(result.clone())).await
                }
                Settlement::Fail(error) => self.client.fail(&self.fail_params(task, error)).await,
            }
        })
        .await
    }

    fn fail_params(&self, task: &Task, error: &TaskError) -> FailParams {
        let attempt = u32::try_from(task.attempt).unwrap_or(u32::MAX);
        let delay = if error.is_retryable() { self.options.backoff.delay_ms(attempt) } else { 0 };
        let delay_ms = i64::try_from(delay).unwrap_or(i64::MAX);
        FailParams::new(&task.id, &self.worker_id)
            .error(error.envelope().to_json())
            .retryable(error.is_retryable())
            .delay_ms(delay_ms)
    }
}

/// Runs a settle write, again (up to [`SETTLE_TRIES`] in all) while the
/// store reports a transient error.
pub(crate) async fn with_transient_retries<T, F, Fut>(mut write: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut tries = 1;
    loop {
        match write().await {
            Err(e) if e.is_transient() && tries < SETTLE_TRIES => {
                tokio::time::sleep(settle_retry_pause(tries)).await;
                tries += 1;
            }
            other => return other,
        }
    }
}
