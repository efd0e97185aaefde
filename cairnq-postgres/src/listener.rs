//! Push wakeups: one LISTEN connection per store.
//!
//! Migration 0003 installs a trigger that notifies `cairnq_queued` (payload:
//! the queue) when a row becomes queued and `cairnq_done` (payload: the
//! task id) when a row becomes terminal. The listener forwards those to
//! every watch and feed of its [`PushSource`] (the store's
//! [`Notifications`](cairnq_core::Notifications)), so an
//! idle worker, a waiting caller or a watching dashboard hears as soon as
//! something relevant commits.
//!
//! Notifications only cut sleeps short; polling stays the source of truth.
//! A watch subscribes when taken, whether or not the connection is up: the
//! listener says [`Notice::Resync`] (anything may have changed) when LISTEN
//! succeeds and when a live connection drops, so a watch taken before the
//! connection came up ends then instead of sleeping out its poll. While
//! the connection is down (server restart, network) the listener reconnects
//! with backoff. A server that refuses for good — an error no wait cures,
//! on connecting or on LISTEN itself: a connection pooler that does not
//! support LISTEN (`feature_not_supported`), a role that may no longer log
//! in, a standby — ends the listener: the store falls back to polling alone
//! and [`PushSource::lost`] resolves with the reason, once, for a worker to
//! report. Channels are per database, not per schema, so two installations
//! in one database wake each other spuriously — harmless, as a wakeup only
//! triggers a poll.
//!
//! A transaction pooler that accepts LISTEN but hands the session to
//! someone else after it (PgBouncer in transaction mode) cannot be told
//! from a quiet database: notifications just never come, and everything
//! still works at the poll interval. Point the LISTEN connection at
//! Postgres directly ([`PostgresOptions::listen_dsn`](crate::PostgresOptions::listen_dsn))
//! or turn wakeups off there ([`PostgresOptions::listen`](crate::PostgresOptions::listen)).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cairnq_core::backend::broadcast_feed;
use cairnq_core::store::{Change, ChangeFeed, FeedParams, PushSource, WakeupsLost};
use cairnq_core::{ChangeWatch, Error, Wake};
use futures::StreamExt;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Notification};

use crate::error::classify;
use crate::pool::endpoint;
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
    /// The listener (re)connected or dropped: notifications may have been
    /// missed.
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

    fn change(self) -> Change {
        match self {
            Self::Queued(queue) => Change::Queued { queue },
            // The payload is the id alone (the shared trigger's format).
            Self::Done(task_id) => Change::Finished { task_id, queue: None },
            Self::Resync => Change::Unknown,
        }
    }
}

/// Why the listener gave up, once it has.
type Refusal = watch::Sender<Option<Arc<Error>>>;

/// The LISTEN connection's task and the fan-out to sleepers. Dropping it
/// stops the task and closes the connection.
#[derive(Debug)]
pub(crate) struct Listener {
    notices: broadcast::Sender<Notice>,
    live: Arc<AtomicBool>,
    refused: Arc<Refusal>,
    task: JoinHandle<()>,
}

impl Listener {
    /// Starts listening (and keeps reconnecting, unless refused for good)
    /// with `config`.
    pub(crate) fn start(config: tokio_postgres::Config, connector: Connector) -> Self {
        let (notices, _) = broadcast::channel(1024);
        let live = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(watch::Sender::new(None));
        let task = tokio::spawn(run(config, connector, notices.clone(), Arc::clone(&live), Arc::clone(&refused)));
        Self { notices, live, refused, task }
    }

    /// Whether the LISTEN connection is up right now.
    pub(crate) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Whether the server refused LISTEN for good (the store only polls).
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.borrow().is_some()
    }

    /// Stops the task (idempotent).
    pub(crate) fn stop(&self) {
        self.task.abort();
        self.live.store(false, Ordering::Release);
    }
}

impl PushSource for Listener {
    /// Subscribes now; the watch completes on the next notice relevant to
    /// `wake`, or when the connection comes up or drops. Never once the
    /// server refused LISTEN for good (sleepers then poll).
    fn watch(&self, wake: &Wake) -> ChangeWatch {
        let mut notices = self.notices.subscribe();
        if self.is_refused() {
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

    /// Every notice from now on, as changes (notifications name tasks,
    /// not always their queue: feed readers filter).
    fn feed(&self, _params: &FeedParams) -> ChangeFeed {
        broadcast_feed(self.notices.subscribe(), |notice: Notice| Some(notice.change()))
    }

    /// Resolves with the reason once the server refused LISTEN for good.
    fn lost(&self) -> WakeupsLost {
        let mut refused = self.refused.subscribe();
        Box::pin(async move {
            let reason = match refused.wait_for(Option::is_some).await {
                Ok(reason) => reason.as_ref().map(|e| e.replicate()),
                Err(_) => None,
            };
            match reason {
                Some(reason) => reason,
                // The store closed first: nothing was lost.
                None => std::future::pending().await,
            }
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How one connection's life ended.
enum Ended {
    /// LISTEN worked until the connection dropped.
    Dropped,
    /// Connecting or LISTEN failed in a way a retry may cure.
    Failed,
    /// The server refused in a way no retry cures.
    Refused(Error),
}

async fn run(
    config: tokio_postgres::Config,
    connector: Connector,
    notices: broadcast::Sender<Notice>,
    live: Arc<AtomicBool>,
    refused: Arc<Refusal>,
) {
    let mut retry = FIRST_RETRY;
    loop {
        // NoTls is Copy, the TLS connector only Clone: which one depends on
        // the `tls` feature.
        #[allow(clippy::clone_on_copy)]
        let connector = connector.clone();
        match listen_until_dropped(&config, connector, &notices, &live).await {
            Ended::Dropped => {
                live.store(false, Ordering::Release);
                let _ = notices.send(Notice::Resync);
                retry = FIRST_RETRY;
            }
            Ended::Failed => {}
            Ended::Refused(reason) => {
                refused.send_replace(Some(Arc::new(reason)));
                return;
            }
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(LAST_RETRY);
    }
}

/// A failed connect or LISTEN: for good unless a retry may cure it. The
/// message names the server, as a pooled connection's does.
fn failed(config: &tokio_postgres::Config, step: &str, error: tokio_postgres::Error) -> Ended {
    let doing = match endpoint(config) {
        Some(endpoint) => format!("listen for push wakeups from Postgres at {endpoint}"),
        None => "listen for push wakeups".to_string(),
    };
    let error = classify(&doing, step, error);
    if error.is_transient() { Ended::Failed } else { Ended::Refused(error) }
}

/// One connection's life.
async fn listen_until_dropped(
    config: &tokio_postgres::Config,
    connector: Connector,
    notices: &broadcast::Sender<Notice>,
    live: &AtomicBool,
) -> Ended {
    let (client, mut connection) = match config.connect(connector).await {
        Ok(connected) => connected,
        Err(error) => return failed(config, "connect", error),
    };
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
    if let Err(error) = client.batch_execute(&format!("listen {QUEUED_CHANNEL}; listen {DONE_CHANNEL}")).await {
        driver.abort();
        return failed(config, "listen", error);
    }
    live.store(true, Ordering::Release);
    // Watches taken while the connection was down end now.
    let _ = notices.send(Notice::Resync);
    let _ = driver.await;
    Ended::Dropped
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
