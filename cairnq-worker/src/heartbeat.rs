//! The heartbeat loop: one per worker, renewing every unsettled lease with
//! one `heartbeat_batch` per tick.
//!
//! The reply lists the leases still held: a task missing from it lost its
//! lease (another worker may run it now), so only that task's context is
//! flagged, its outcome will be discarded, and the loss is reported; a
//! pending cancel flips the context's `canceled()`.
//!
//! Two other things put every lease at risk, and are reported apart: a
//! tick that fires late by more than a third of the lease (the async
//! runtime is blocked, or the process was suspended), and a renewal that
//! itself takes that long (the store is slow). Lateness is counted from
//! when the loop was ready to wait, so a slow renewal never reads as a
//! blocked runtime.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use crate::issue::{Phase, WorkerIssue};
use crate::shared::Shared;

/// Renews leases every heartbeat interval until `stop` turns true.
pub(crate) async fn heartbeat_loop(core: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let every = core.options.heartbeat_interval();
    let tolerance = core.options.lease / 3;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let tolerance = tolerance.max(Duration::from_millis(1));
    loop {
        let ready = Instant::now();
        let scheduled = tokio::select! {
            scheduled = ticks.tick() => scheduled,
            _ = stop.wait_for(|stopped| *stopped) => return,
        };
        let late_by = scheduled.max(ready).elapsed();
        if late_by > tolerance {
            core.report(WorkerIssue::BlockedRuntime { late_by });
        }
        let renewing = Instant::now();
        renew(&core).await;
        let took = renewing.elapsed();
        if took > tolerance {
            core.report(WorkerIssue::SlowStore { phase: Phase::Heartbeat, took });
        }
    }
}

async fn renew(core: &Shared) {
    let held = core.leases.snapshot();
    if held.is_empty() {
        return;
    }
    let ids = held.iter().map(|(id, _)| id.clone()).collect();
    // A failing heartbeat keeps its schedule rather than backing off: a
    // pause longer than the lease would only make sure every lease is lost.
    // Its failures still count (an unusable database stops the worker).
    let kept = match core.session.heartbeat_batch(ids).await {
        Ok(kept) => {
            core.store_ok();
            kept
        }
        Err(error) => return core.store_failed(Phase::Heartbeat, None, error),
    };
    let kept: HashMap<String, bool> = kept.into_iter().map(|l| (l.id.clone(), l.cancel_requested())).collect();
    for (id, state) in held {
        match kept.get(&id) {
            Some(true) => state.mark_canceled(),
            Some(false) => state.cancel_checked(),
            // Settled between the snapshot and the reply: not a lost lease.
            None if state.is_settled() => {}
            None => {
                // One report per task, so each event names its task.
                core.lease_lost(&state);
                core.leases.remove(&id, &state);
            }
        }
    }
}
