//! From claimed rows to handler calls, and the drain at stop: buffered
//! tasks start as call slots free, batch names start their calls at once,
//! rows without a handler are refused, and a stop runs out the buffer within
//! the drain timeout before abandoning what is left.

use std::collections::HashMap;
use std::sync::Arc;

use cairnq_core::{ErrorEnvelope, Task, codes};

use super::{ClaimLoop, Registered};
use crate::call::run_call;
use crate::context::TaskContext;
use crate::handler::Handler;
use crate::issue::{AbandonReason, WorkerIssue};
use crate::observe::Attempt;
use crate::settle::Settlement;
use crate::state::{CallLoad, TaskState};
use crate::stop::StopLevel;
use crate::task_error::TaskError;

impl ClaimLoop {
    /// Starts buffered tasks while call slots are free; a task whose lease
    /// was lost while it waited is dropped unstarted.
    pub(super) fn start_buffered(&mut self) {
        let mut running = self.core.load.view().calls;
        while running < self.core.options.concurrency {
            let Some(ctx) = self.buffer.pop_front() else { return };
            if ctx.lost_lease() {
                continue;
            }
            let Some(registered) = self.handlers.get(ctx.name()).cloned() else {
                self.refuse(ctx);
                continue;
            };
            let name = ctx.name().to_string();
            self.start_call(&name, &registered, vec![ctx]);
            running += 1;
        }
    }

    /// Takes claimed rows in: each lease joins the heartbeat's list; batch
    /// names start their calls now (their draws reserved the slots), single
    /// tasks queue in the buffer, rows without a handler are refused.
    pub(super) fn dispatch(&mut self, tasks: Vec<Task>) {
        let mut batches: HashMap<String, Vec<TaskContext>> = HashMap::new();
        for task in tasks {
            let attempt = Attempt::claimed(&task, &self.core.meters);
            let state = Arc::new(TaskState::new(task.cancel_requested_at_ms.is_some(), attempt));
            if let Some(earlier) = self.core.leases.insert(&task.id, state.clone()) {
                self.core.lease_lost(&earlier);
            }
            let ctx = TaskContext::new(task, state, self.core.clone());
            match self.handlers.get(ctx.name()).map(|r| &r.handler) {
                Some(Handler::Batch(_)) => batches.entry(ctx.name().to_string()).or_default().push(ctx),
                Some(Handler::Single(_)) => self.buffer.push_back(ctx),
                None => self.refuse(ctx),
            }
        }
        for (name, contexts) in batches {
            if let Some(registered) = self.handlers.get(&name).cloned() {
                let per_call = registered.options.batch.unwrap_or(1).max(1);
                let mut contexts = contexts.into_iter().peekable();
                while contexts.peek().is_some() {
                    self.start_call(&name, &registered, contexts.by_ref().take(per_call).collect());
                }
            }
        }
    }

    fn start_call(&mut self, name: &str, registered: &Registered, call: Vec<TaskContext>) {
        let bytes = match self.core.options.max_in_flight_bytes {
            Some(_) => call.iter().map(payload_bytes).sum(),
            None => 0,
        };
        let load = CallLoad {
            name: name.to_string(),
            resource: registered.options.resource.clone(),
            tasks: u32::try_from(call.len()).unwrap_or(u32::MAX),
            bytes,
        };
        let guard = self.core.load.start(load);
        self.calls.spawn(run_call(self.core.clone(), registered.handler.clone(), call, guard));
    }

    /// A claimed row this worker has no handler for fails permanently.
    fn refuse(&mut self, ctx: TaskContext) {
        let core = self.core.clone();
        let message = format!("no handler is registered for {:?} on worker {}", ctx.name(), core.worker_id);
        let envelope = ErrorEnvelope::new(codes::NO_HANDLER, message).error_type("NoHandler");
        let how = Settlement::Fail(TaskError::from_envelope(envelope));
        self.calls.spawn(async move { core.settle_outcome(ctx.task(), ctx.state(), how).await });
    }

    /// Finishes the claim in flight, runs the buffered tasks and waits for
    /// every call up to the drain timeout, or until asked to stop at once;
    /// then abandons the rest: their contexts see a lost lease and their
    /// leases expire.
    pub(super) async fn drain(&mut self) {
        let timeout = self.core.options.drain_timeout;
        let mut stop = self.stop.clone();
        let reason = tokio::select! {
            ran_out = tokio::time::timeout(timeout, self.run_out()) => match ran_out {
                Ok(()) => return,
                Err(_) => AbandonReason::DrainTimeout,
            },
            _ = stop.wait_for(|s| *s == StopLevel::AtOnce) => AbandonReason::StoppedAtOnce,
        };
        self.buffer.clear();
        let abandoned = self.calls.len();
        self.calls.shutdown().await;
        for (id, state) in self.core.leases.snapshot() {
            state.mark_lost();
            self.core.leases.remove(&id, &state);
        }
        self.core.report(WorkerIssue::Abandoned { calls: abandoned, reason });
    }

    /// Claims nothing more; lets the claim in flight land, starts every
    /// buffered task as slots free and waits for all calls.
    async fn run_out(&mut self) {
        if let Some((claim, _)) = self.in_flight.as_mut() {
            let claimed = claim.await;
            self.finish_claim(claimed);
        }
        if self.core.is_halted() {
            // Their results could not be written: leave them to their leases.
            for ctx in self.buffer.drain(..) {
                ctx.state().mark_lost();
                self.core.leases.remove(ctx.task_id(), ctx.state());
            }
        }
        loop {
            while self.calls.try_join_next().is_some() {}
            self.start_buffered();
            if self.buffer.is_empty() {
                break;
            }
            self.core.load.freed.notified().await;
        }
        while self.calls.join_next().await.is_some() {}
    }
}

fn payload_bytes(ctx: &TaskContext) -> u64 {
    u64::try_from(ctx.payload_json().as_str().len()).unwrap_or(u64::MAX)
}
