//! Push wakeups: one LISTEN connection per store.
//!
//! Migration 0003 installs a trigger that notifies `cairnq_queued` (payload:
//! the queue) when a row becomes queued and `cairnq_done` (payload: the
//! task id) when a row becomes terminal. The listener forwards those to
//! every sleeper in [`Listener::wait`], so an idle worker or a waiting
//! caller wakes as soon as something relevant commits.
//!
//! Notifications only cut sleeps short; polling stays the source of truth.
//! While the connection is down (server restart, network), sleepers just
//! sleep their poll interval, and the listener reconnects with backoff. A
//! reconnect wakes everyone once, since anything may have happened in the
//! gap. Channels are per database, not per schema, so two installations in
//! one database wake each other spuriously — harmless, as a wakeup only
//! triggers a poll.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cairnq_core::{ChangeWatch, Wake};
use futures::StreamExt;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Notification};

use crate::tls::Connector;

const QUEUED_CHANNEL: &str = "cairnq_queued";
const DONE_CHANNEL: &str = "cairnq_done";
const FIRST_RETRY: Duration = Duration::from_millis(100);
const LAST_RETRY: Duration = Duration::from_secs(5);

/// Something that may have changed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Notice {
    /// A row became queued on this queue.
    Queued(String),
    /// This task became terminal.
    Done(String),
    /// The listener (re)connected: notifications may have been missed.
    Resync,
}

impl Notice {
    fn from_notification(n: &Notification) -> Option<Self> {
        match n.channel() {
            QUEUED_CHANNEL => Some(Self::Queued(n.payload().to_string())),
            DONE_CHANNEL => Some(Self::Done(n.payload().to_string())),
            _ => None,
        }
    }

    fn wakes(&self, wake: &Wake) -> bool {
        match (self, wake) {
            (Self::Resync, _) => true,
            (Self::Queued(queue), Wake::Queued(queues)) => queues.contains(queue),
            (Self::Done(id), Wake::TaskDone(wanted)) => id == wanted,
            _ => false,
        }
    }
}

/// The LISTEN connection's task and the fan-out to sleepers. Dropping it
/// stops the task and closes the connection.
#[derive(Debug)]
pub(crate) struct Listener {
    notices: broadcast::Sender<Notice>,
    live: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Listener {
    /// Starts listening (and keeps reconnecting) with `config`.
    pub(crate) fn start(config: tokio_postgres::Config, connector: Connector) -> Self {
        let (notices, _) = broadcast::channel(1024);
        let live = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(run(config, connector, notices.clone(), Arc::clone(&live)));
        Self { notices, live, task }
    }

    /// Whether the LISTEN connection is up right now.
    pub(crate) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Subscribes now; the watch completes on the next notice relevant to
    /// `wake` (never while the connection is down: sleepers then poll).
    pub(crate) fn watch(&self, wake: &Wake) -> ChangeWatch {
        let mut notices = self.notices.subscribe();
        if !self.is_live() {
            return Box::pin(std::future::pending());
        }
        let wake = wake.clone();
        Box::pin(async move {
            loop {
                match notices.recv().await {
                    Ok(notice) if notice.wakes(&wake) => return,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => return,
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        })
    }

    /// Stops the task (idempotent).
    pub(crate) fn stop(&self) {
        self.task.abort();
        self.live.store(false, Ordering::Release);
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run(
    config: tokio_postgres::Config,
    connector: Connector,
    notices: broadcast::Sender<Notice>,
    live: Arc<AtomicBool>,
) {
    let mut retry = FIRST_RETRY;
    loop {
        // NoTls is Copy, the TLS connector only Clone: which one depends on
        // the `tls` feature.
        #[allow(clippy::clone_on_copy)]
        let connector = connector.clone();
        let listened = listen_until_dropped(&config, connector, &notices, &live).await;
        live.store(false, Ordering::Release);
        let _ = notices.send(Notice::Resync);
        if listened {
            retry = FIRST_RETRY;
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(LAST_RETRY);
    }
}

/// One connection's life. Returns whether LISTEN succeeded on it.
async fn listen_until_dropped(
    config: &tokio_postgres::Config,
    connector: Connector,
    notices: &broadcast::Sender<Notice>,
    live: &AtomicBool,
) -> bool {
    let Ok((client, mut connection)) = config.connect(connector).await else { return false };
    let forward = notices.clone();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(n) = message
                && let Some(notice) = Notice::from_notification(&n)
            {
                let _ = forward.send(notice);
            }
        }
    });
    let listening = client.batch_execute(&format!("listen {QUEUED_CHANNEL}; listen {DONE_CHANNEL}")).await.is_ok();
    if listening {
        live.store(true, Ordering::Release);
        let _ = notices.send(Notice::Resync);
        let _ = driver.await;
    } else {
        driver.abort();
    }
    listening
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_wake_only_matching_sleepers() {
        let queued = Notice::Queued("images".into());
        assert!(queued.wakes(&Wake::Queued(vec!["a".into(), "images".into()])));
        assert!(!queued.wakes(&Wake::Queued(vec!["a".into()])));
        assert!(!queued.wakes(&Wake::TaskDone("images".into())));
        let done = Notice::Done("task_1".into());
        assert!(done.wakes(&Wake::TaskDone("task_1".into())));
        assert!(!done.wakes(&Wake::TaskDone("task_2".into())));
        assert!(Notice::Resync.wakes(&Wake::TaskDone("task_2".into())));
    }
}
