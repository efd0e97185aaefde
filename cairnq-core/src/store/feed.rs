//! What a store says about changes beyond one watch: a feed of typed
//! changes for long-lived watchers ([`CairnQ::watch`](crate::CairnQ::watch),
//! dashboards, autoscalers), and the moment push wakeups stop for good.
//!
//! Both ride on the same push channel as a watch
//! ([`Store::notifications`](super::Store::notifications)) and, like it,
//! only say when to look: polling stays the source of truth.

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::error::Error;

/// Something that changed, as a [`ChangeFeed`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A task became queued (claimable now or at its due time) on `queue`.
    Queued {
        /// The queue.
        queue: String,
    },
    /// A task became terminal (succeeded, failed or canceled).
    Finished {
        /// The task.
        task_id: String,
        /// Its queue, when the backend knows it without a read (Postgres
        /// notifications name only the task; some SQLite writes too).
        queue: Option<String>,
    },
    /// Something may have changed that the store cannot name: another
    /// process's commit on SQLite, a notification connection that
    /// (re)connected or fell behind on Postgres. Read the store again.
    Unknown,
}

/// A stream of [`Change`]s from [`Notifications::feed`](super::Notifications::feed);
/// dropping it withdraws the subscription.
pub type ChangeFeed = BoxStream<'static, Change>;

/// A future from [`Notifications::lost`](super::Notifications::lost): the
/// reason push wakeups stopped for good.
pub type WakeupsLost = BoxFuture<'static, Error>;

/// What a [`ChangeFeed`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeedParams {
    /// The queues whose changes matter. A backend may leave changes of
    /// other queues out, or pass them on for the caller to filter.
    pub queues: Vec<String>,
}

impl FeedParams {
    /// Changes of these queues.
    pub fn new(queues: Vec<String>) -> Self {
        Self { queues }
    }
}
