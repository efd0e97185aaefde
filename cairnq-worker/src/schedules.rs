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
            match declare(&core).await {
                Ok(()) => declared = true,
                Err(error) if not_installed(&error) => return core.report(WorkerIssue::SchedulesOff { error }),
                Err(error) => core.store_failed(Phase::Schedules, None, error),
            }
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
            // A worker stopping on an unusable database said so once already.
            Err(_) if core.is_halted() => return,
            Err(error) if not_installed(&error) => return core.report(WorkerIssue::SchedulesOff { error }),
            Err(error) => core.store_failed(Phase::Schedules, None, error),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {},
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
    }
}

/// Upserts the declared schedules (on an error, the next pass tries again).
async fn declare(core: &Shared) -> cairnq_core::Result<()> {
    let declared = core.client.declare_schedules(&core.options.schedules).await?;
    if !declared.undeclared.is_empty() {
        core.report(WorkerIssue::UndeclaredSchedules { names: declared.undeclared });
    }
    Ok(())
}

/// Whether `error` says the database has no usable `cairnq_ext_schedules`
/// table: opened as it is (`Install::Existing`) before this SDK's extension
/// migrations ran, or a role without rights on it. Both backends name the
/// table in such errors ("no such table: cairnq_ext_schedules", `relation
/// "cairnq_ext_schedules" does not exist`, "permission denied for table
/// cairnq_ext_schedules"). The tasks are still there to run, so the worker goes
/// on without schedules instead of stopping as for an unusable database;
/// whether the database is usable at all is the claim loop's to find out.
fn not_installed(error: &Error) -> bool {
    !error.is_transient() && error.to_string().contains("cairnq_ext_schedules")
}
