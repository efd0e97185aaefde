//! The schedule loop: every worker (unless turned off) upserts the
//! schedules its code declares, then fires due schedules on its own timer.
//! Any number of workers on one database do this at once with no leader:
//! each slot's fire is a compare-and-set in the store, so exactly one of
//! them wins it (see `cairnq_core::CairnQ::fire_due_schedules`).

use std::collections::BTreeSet;
use std::sync::Arc;

use cairnq_core::Error;
use tokio::sync::watch;

use crate::issue::{Phase, WorkerIssue};
use crate::shared::Shared;

/// Declares, then fires due schedules every `schedules_every` until `stop`
/// turns true; returns at once when schedules are off or the store has
/// none (an `UnsupportedBackend` store).
pub(crate) async fn schedule_loop(core: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let Some(every) = core.options.schedules_every else { return };
    let mut declared = core.options.schedules.is_empty();
    let mut reported = BTreeSet::new();
    loop {
        if !declared {
            declared = declare(&core).await;
        }
        match core.client.fire_due_schedules().await {
            Ok(report) => {
                core.store_ok();
                for (schedule, error) in report.failed {
                    // A broken row fails every pass; say so once.
                    if reported.insert(schedule.clone()) {
                        core.report(WorkerIssue::ScheduleFailed { schedule, error });
                    }
                }
            }
            Err(Error::UnsupportedBackend { .. }) => return,
            Err(error) => core.store_failed(Phase::Schedules, None, error),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {},
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
    }
}

/// Upserts the declared schedules; whether that worked (else the next pass
/// tries again).
async fn declare(core: &Shared) -> bool {
    match core.client.declare_schedules(&core.options.schedules).await {
        Ok(declared) => {
            if !declared.undeclared.is_empty() {
                core.report(WorkerIssue::UndeclaredSchedules { names: declared.undeclared });
            }
            true
        }
        Err(error) => {
            core.store_failed(Phase::Schedules, None, error);
            false
        }
    }
}
