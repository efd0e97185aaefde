//! What every part of a running worker shares: the client, the options,
//! the leases the heartbeat renews, the load, the completion queue, and
//! where problems are reported.
//!
//! Every store call of the loop (probe, claim, heartbeat, repair, settle,
//! schedules) reports its outcome here ([`Shared::store_ok`],
//! [`Shared::store_failed`]): an error waiting will not heal is reported
//! once per outage and, under [`OnUnusable::Stop`], stops the worker and
//! becomes what `Worker::run` returns. An unreachable database goes through
//! the store's one [`Outage`] state in the process, so an outage is a line
//! when it starts, a reminder a minute, and a line when it ends, not a line
//! per failed call. Settling itself is in [`settle`](crate::settle).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cairnq_core::observe::{Outage, OutageNews, Outcome};
use cairnq_core::{CairnQ, Error, WorkerSession};
use parking_lot::Mutex;

use crate::completions::{CompletionQueue, completion_queue};
use crate::issue::{OnError, Phase, WorkerIssue};
use crate::observe::{Attempt, Meters};
use crate::options::{OnUnusable, WorkerOptions};
use crate::state::{Leases, Load, TaskState};
use crate::stop::{StopLevel, StopSwitch, raise};

pub(crate) struct Shared {
    /// The application-side client (submits from handlers, reads, waits).
    pub(crate) client: CairnQ,
    /// The lease holder: claims, renewals, settles, watches.
    pub(crate) session: WorkerSession,
    pub(crate) options: WorkerOptions,
    pub(crate) worker_id: String,
    pub(crate) leases: Leases,
    pub(crate) load: Arc<Load>,
    pub(crate) completions: Arc<CompletionQueue>,
    /// The metric handles of the names this worker ran.
    pub(crate) meters: Meters,
    on_error: Option<OnError>,
    /// The worker's stop switch: an unusable database flips it.
    stop: StopSwitch,
    /// The error that stopped the worker, for `Worker::run` to return.
    halted: Mutex<Option<Error>>,
    /// An unusable error was reported since the last successful store call.
    unusable_reported: AtomicBool,
    /// The store's outage state, shared by everything in the process.
    outage: Arc<Outage>,
}

impl Shared {
    pub(crate) fn new(session: WorkerSession, options: WorkerOptions, stop: StopSwitch) -> Self {
        let worker_id = session.worker_id().to_string();
        let on_error = options.on_error.clone();
        let load = Arc::<Load>::default();
        let completions = completion_queue(session.clone(), options.completion_linger, load.clone());
        let meters = Meters::new(&worker_id);
        let outage = session.outage();
        Self {
            client: session.client().clone(),
            session,
            options,
            worker_id,
            leases: Leases::default(),
            load,
            completions,
            meters,
            on_error,
            stop,
            halted: Mutex::new(None),
            unusable_reported: AtomicBool::new(false),
            outage,
        }
    }

    /// The store's outage state in this process.
    pub(crate) fn outage(&self) -> &Outage {
        &self.outage
    }

    /// Hands an issue to the hook (a `tracing` event by default).
    pub(crate) fn report(&self, issue: WorkerIssue) {
        crate::issue::deliver(self.on_error.as_ref(), &self.worker_id, None, issue);
    }

    /// Hands an issue about one attempt to the hook; its event names the
    /// task as every event about an attempt does.
    pub(crate) fn report_about(&self, attempt: &Attempt, issue: WorkerIssue) {
        crate::issue::deliver(self.on_error.as_ref(), &self.worker_id, Some(attempt), issue);
    }

    /// A store call of the loop succeeded: any outage is over, and the next
    /// unusable error will be reported again.
    pub(crate) fn store_ok(&self) {
        self.unusable_reported.store(false, Ordering::Relaxed);
        if let Some(OutageNews::Ended { after }) = self.outage.reached() {
            let endpoint = self.outage.endpoint().map(str::to_string);
            self.report(WorkerIssue::Reconnected { endpoint, after });
        }
    }

    /// A store call of the loop failed in `phase`, about `attempt` when it
    /// was about one task. A healable error is reported as it comes (the
    /// callers pace their retries). An unusable one is reported once until
    /// a store call succeeds again and, under [`OnUnusable::Stop`], stops
    /// the worker: claims end, running calls drain, and `Worker::run`
    /// returns the error.
    pub(crate) fn store_failed(&self, phase: Phase, attempt: Option<&Attempt>, error: Error) {
        let task_id = attempt.map(|a| a.task_id().to_string());
        let deliver = |issue| crate::issue::deliver(self.on_error.as_ref(), &self.worker_id, attempt, issue);
        if error.is_unreachable() {
            let down_for = match self.outage.failed(&error) {
                Some(OutageNews::Began) => std::time::Duration::ZERO,
                Some(OutageNews::Continues { down_for }) => down_for,
                // Said already, by this worker or another part of the process.
                _ => return,
            };
            let endpoint = self.outage.endpoint().map(str::to_string);
            return self.report(WorkerIssue::Unreachable { phase, endpoint, down_for, error });
        }
        if !error.is_unusable() {
            return deliver(WorkerIssue::Store { phase, task_id, error });
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
        deliver(WorkerIssue::Unusable { phase, task_id, error: reported, stopping });
        if stopping {
            raise(&self.stop, StopLevel::Draining);
        }
    }

    /// The lease of the attempt turned out lost (a settle write or a
    /// heartbeat said so): marks it and reports it, once per task.
    pub(crate) fn lease_lost(&self, state: &TaskState) {
        if state.mark_lost() {
            state.attempt.settled(Outcome::LostLease, None);
            let task_ids = vec![state.attempt.task_id().to_string()];
            self.report_about(&state.attempt, WorkerIssue::LostLeases { task_ids });
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
}
