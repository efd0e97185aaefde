//! The repair loop: at start and then every `repair_every`, the worker asks
//! the store to repair rows of its queues that no ordinary operation would
//! move (a running row without a lease, a queued row without a due time;
//! see [`Store::repair`](cairnq_core::Store::repair)) and reports what it
//! repaired. Such rows come from a foreign or broken writer; without this
//! they would sit there forever, unseen.

use std::sync::Arc;

use cairnq_core::store::RepairParams;
use tokio::sync::watch;

use crate::issue::{Phase, WorkerIssue};
use crate::shared::Shared;

/// Repairs now and every interval until `stop` turns true; does nothing
/// when repairs are turned off.
pub(crate) async fn repair_loop(core: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let Some(every) = core.options.repair_every else { return };
    let params = RepairParams::new(core.options.queues.clone());
    loop {
        match core.session.repair(&params).await {
            Ok(repaired) if repaired.is_empty() => core.store_ok(),
            Ok(repaired) => {
                core.store_ok();
                core.report(WorkerIssue::Repaired { repaired });
            }
            Err(error) => core.store_failed(Phase::Repair, None, error),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {},
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
    }
}
