//! The one report of lost push wakeups: when the store's push channel
//! stops for good (a LISTEN a connection pooler refuses, a role that may no
//! longer connect; see [`Notifications::lost`](cairnq_core::Notifications::lost)),
//! the worker keeps working at its poll interval and says so once, rather
//! than the store reconnecting forever or the slowdown going unexplained.

use std::sync::Arc;

use tokio::sync::watch;

use crate::issue::WorkerIssue;
use crate::shared::Shared;

/// Reports lost push wakeups once, unless `stop` turns true first.
pub(crate) async fn report_lost_wakeups(core: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let lost = core.session.notifications().lost();
    tokio::select! {
        error = lost => core.report(WorkerIssue::WakeupsLost { error, poll_interval: core.options.poll_interval }),
        _ = stop.wait_for(|stopped| *stopped) => {}
    }
}
