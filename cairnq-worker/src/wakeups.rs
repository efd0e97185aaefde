//! The one report of lost push wakeups: when the store's push channel
//! stops for good (a LISTEN a connection pooler refuses, a role that may no
//! longer connect; see [`Notifications::lost`](cairnq_core::Notifications::lost)),
//! the worker keeps working at its poll interval and says so once, rather
//! than the store reconnecting forever or the slowdown going unexplained.
//! A store that polls by design gets a notice instead of a warning.

use std::sync::Arc;

use tokio::sync::watch;

use crate::issue::WorkerIssue;
use crate::shared::Shared;

/// Reports lost push wakeups once, unless `stop` turns true first; a store
/// that polls by design is reported at once as [`WorkerIssue::Polling`].
pub(crate) async fn report_lost_wakeups(core: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let notifications = core.session.notifications();
    if let Some(reason) = notifications.polls_only_reason() {
        let poll_interval = core.options.poll_interval;
        core.report(WorkerIssue::Polling { reason: reason.replicate(), poll_interval });
        return;
    }
    let lost = notifications.lost();
    tokio::select! {
        error = lost => core.report(WorkerIssue::WakeupsLost { error, poll_interval: core.options.poll_interval }),
        _ = stop.wait_for(|stopped| *stopped) => {}
    }
}
