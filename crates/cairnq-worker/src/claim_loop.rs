//! The claim loop: probe, claim, dispatch, and wait only when there is
//! nothing to do.
//!
//! Each round sizes a claim from the current load ([`plan_claim`]); with no
//! room it waits for a call to end (a freed slot triggers the next claim at
//! once). With room it asks the read-only probe first, so an idle worker
//! never takes the write lock, then runs one claim transaction and hands
//! every row to a call. After a claim that took rows it looks again at once;
//! when idle it sleeps in [`Store::wait_for_change`](cairnq_core::Store),
//! which a push wakeup may cut short. On stop it stops claiming, drains the
//! running calls up to the drain timeout, abandons the rest (their leases
//! expire), and only then stops the heartbeat.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::store::ProbeParams;
use cairnq_core::{ErrorEnvelope, Task, Wake, codes};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::call::run_call;
use crate::claim_plan::{NameTable, plan_claim};
use crate::context::TaskContext;
use crate::core::{Settlement, WorkerCore};
use crate::handler::Handler;
use crate::heartbeat::heartbeat_loop;
use crate::options::{TaskOptions, WorkerIssue};
use crate::state::{CallLoad, TaskState};
use crate::task_error::TaskError;

/// A handler with its per-name options.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) handler: Handler,
    pub(crate) options: TaskOptions,
}

/// What one round found.
enum Round {
    /// Rows were claimed (or a left-out draw may still find some): go again.
    Busy,
    /// No room: wait for a call to end.
    Full,
    /// Nothing due: sleep until a change or the poll interval.
    Idle,
    /// The store failed: reported; pause one poll interval.
    Failed,
}

pub(crate) struct ClaimLoop {
    core: Arc<WorkerCore>,
    handlers: Arc<HashMap<String, Registered>>,
    names: NameTable,
    stop: watch::Receiver<bool>,
    calls: JoinSet<()>,
    rotation: usize,
    empty_retries: usize,
}

impl ClaimLoop {
    pub(crate) fn new(
        core: Arc<WorkerCore>,
        handlers: HashMap<String, Registered>,
        names: NameTable,
        stop: watch::Receiver<bool>,
    ) -> Self {
        let handlers = Arc::new(handlers);
        Self { core, handlers, names, stop, calls: JoinSet::new(), rotation: 0, empty_retries: 0 }
    }

    /// Runs until stopped, then drains.
    pub(crate) async fn run(mut self) {
        let (heartbeat_stop, heartbeat_stopped) = watch::channel(false);
        let heartbeat = tokio::spawn(heartbeat_loop(self.core.clone(), heartbeat_stopped));
        self.claim_until_stopped().await;
        self.drain().await;
        heartbeat_stop.send_replace(true);
        let _ = heartbeat.await;
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    async fn claim_until_stopped(&mut self) {
        while !self.stopped() {
            while self.calls.try_join_next().is_some() {}
            let wait = match self.round().await {
                Round::Busy => continue,
                Round::Full => None,
                Round::Idle | Round::Failed => Some(self.core.options.poll_interval),
            };
            self.pause(wait).await;
        }
    }

    /// Waits for a freed slot (`None`) or up to `idle` for a change, and
    /// always for a stop.
    async fn pause(&mut self, idle: Option<Duration>) {
        let core = self.core.clone();
        let wake = Wake::Queued(core.options.queues.clone());
        let mut stop = self.stop.clone();
        let stopped = stop.wait_for(|s| *s);
        match idle {
            // Bounded by the poll interval too: a cap that no running call
            // holds (a resource of capacity 0) frees nothing.
            None => tokio::select! {
                _ = core.load.freed.notified() => {},
                _ = tokio::time::sleep(core.options.poll_interval) => {},
                _ = stopped => {},
            },
            // A call ending may unblock a resource or a per-name cap that
            // left due work queued, so it ends an idle wait too.
            Some(timeout) => tokio::select! {
                _ = core.client.store().wait_for_change(&wake, timeout) => {},
                _ = core.load.freed.notified() => {},
                _ = stopped => {},
            },
        }
    }

    async fn round(&mut self) -> Round {
        let core = self.core.clone();
        let view = core.load.view();
        let Some(plan) = plan_claim(&core.options, &core.worker_id, &self.names, self.rotation, &view) else {
            return Round::Full;
        };
        self.rotation = self.rotation.wrapping_add(1);
        let probe = ProbeParams::new(core.options.queues.clone(), self.names.probe_names());
        match core.client.store().claimable(&probe).await {
            Ok(true) => {}
            Ok(false) => return Round::Idle,
            Err(error) => return self.failed("probe", error),
        }
        match core.client.claim(&plan.params).await {
            Ok(tasks) if tasks.is_empty() => self.empty_round(plan.left_out_draws),
            Ok(tasks) => {
                self.empty_retries = 0;
                self.dispatch(tasks);
                Round::Busy
            }
            Err(error) => self.failed("claim", error),
        }
    }

    /// A claim found nothing. If limits left draws out, the next rotation
    /// may include them: retry at once, at most once per draw.
    fn empty_round(&mut self, left_out_draws: bool) -> Round {
        if left_out_draws && self.empty_retries < self.names.own.len() {
            self.empty_retries += 1;
            return Round::Busy;
        }
        self.empty_retries = 0;
        Round::Idle
    }

    fn failed(&self, during: &'static str, error: cairnq_core::Error) -> Round {
        self.core.report(WorkerIssue::Store { during, error });
        Round::Failed
    }

    /// Hands claimed rows to calls: one call per task, or per batch of up
    /// to the batch size for batch names.
    fn dispatch(&mut self, tasks: Vec<Task>) {
        let mut by_name: HashMap<String, Vec<TaskContext>> = HashMap::new();
        for task in tasks {
            let state = Arc::new(TaskState::new(task.cancel_requested_at_ms.is_some()));
            self.core.leases.insert(&task.id, state.clone());
            let name = task.name.clone();
            by_name.entry(name).or_default().push(TaskContext::new(task, state, self.core.clone()));
        }
        for (name, contexts) in by_name {
            match self.handlers.get(&name).cloned() {
                Some(registered) => self.start_calls(&name, registered, contexts),
                None => self.refuse(contexts),
            }
        }
    }

    fn start_calls(&mut self, name: &str, registered: Registered, contexts: Vec<TaskContext>) {
        let per_call = match registered.handler {
            Handler::Batch(_) => registered.options.batch.unwrap_or(1).max(1),
            Handler::Single(_) => 1,
        };
        let mut contexts = contexts.into_iter().peekable();
        while contexts.peek().is_some() {
            let call: Vec<TaskContext> = contexts.by_ref().take(per_call).collect();
            let load = CallLoad {
                name: name.to_string(),
                resource: registered.options.resource.clone(),
                tasks: u32::try_from(call.len()).unwrap_or(u32::MAX),
                bytes: call.iter().map(payload_bytes).sum(),
            };
            let guard = self.core.load.start(load);
            self.calls.spawn(run_call(self.core.clone(), registered.handler.clone(), call, guard));
        }
    }

    /// Claimed rows this worker has no handler for fail permanently.
    fn refuse(&mut self, contexts: Vec<TaskContext>) {
        for ctx in contexts {
            let core = self.core.clone();
            let message = format!("no handler is registered for {:?} on worker {}", ctx.name(), core.worker_id);
            let envelope = ErrorEnvelope::new("NoHandler", codes::NO_HANDLER, message, false);
            let how = Settlement::Fail(TaskError::from_envelope(envelope));
            self.calls.spawn(async move { core.settle_outcome(ctx.task(), ctx.state(), how).await });
        }
    }

    /// Waits for running calls up to the drain timeout, then abandons the
    /// rest: their contexts see a lost lease and their leases expire.
    async fn drain(&mut self) {
        let calls = &mut self.calls;
        let finished = async { while calls.join_next().await.is_some() {} };
        if tokio::time::timeout(self.core.options.drain_timeout, finished).await.is_ok() {
            return;
        }
        let abandoned = self.calls.len();
        self.calls.shutdown().await;
        for (id, state) in self.core.leases.snapshot() {
            state.mark_lost();
            self.core.leases.remove(&id);
        }
        self.core.report(WorkerIssue::Abandoned { calls: abandoned });
    }
}

fn payload_bytes(ctx: &TaskContext) -> u64 {
    u64::try_from(cairnq_core::json::to_text(ctx.payload_json()).len()).unwrap_or(u64::MAX)
}
