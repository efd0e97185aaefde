//! How far a stop has gone, and the signals that move it: a worker runs,
//! then drains (claims nothing more, lets running calls finish within the
//! drain timeout), then stops at once (abandons what still runs). A stop
//! only ever moves forward, whoever asks: `stop()`, an unusable database,
//! SIGINT/SIGTERM, a second signal or `stop_now()`.

use std::sync::Arc;

use tokio::sync::watch;

/// A worker's stop state, in the order a stop goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StopLevel {
    /// Claiming and running.
    Running,
    /// Claim nothing more; let running calls finish within the drain timeout.
    Draining,
    /// Abandon running calls now; their leases expire.
    AtOnce,
}

/// The switch every part of a worker shares.
pub(crate) type StopSwitch = Arc<watch::Sender<StopLevel>>;

/// A switch that is running.
pub(crate) fn stop_switch() -> StopSwitch {
    Arc::new(watch::Sender::new(StopLevel::Running))
}

/// Moves the stop to `level`, never back.
pub(crate) fn raise(switch: &watch::Sender<StopLevel>, level: StopLevel) {
    switch.send_if_modified(|now| {
        let raised = level > *now;
        if raised {
            *now = level;
        }
        raised
    });
}

/// SIGINT and SIGTERM (Ctrl-C where there are no Unix signals), listened to
/// from when this is made until it is dropped, so a second signal is heard
/// as well as the first.
pub(crate) struct ShutdownSignals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl ShutdownSignals {
    /// Starts listening.
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let unix = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(term), Ok(int)) => Some((term, int)),
                _ => None,
            };
            Self { unix }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next signal.
    pub(crate) async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((term, int)) = &mut self.unix {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            return;
        }
        if tokio::signal::ctrl_c().await.is_err() {
            // No way to hear a signal: never report one.
            std::future::pending::<()>().await;
        }
    }
}
