//! The store's push notifications behind one seam method
//! ([`Store::notifications`](super::Store::notifications)): a watch for one
//! sleeper, a feed for long-lived watchers, and the moment push wakeups
//! stop for good are three views of one channel, so a backend hands out
//! that channel once ([`PushSource`]) and every wrapper forwards one method.
//!
//! A store without push notifications implements nothing: its handle is
//! [`Notifications::none`], whose watches never complete (sleepers wake by
//! their timeout), whose feed yields nothing and whose wakeups are never
//! lost (they were never pushed). Polling stays the source of truth.

use std::fmt;
use std::sync::Arc;

use super::{ChangeFeed, ChangeWatch, FeedParams, Wake, WakeupsLost};
use crate::error::Error;

/// A backend's push channel, as [`Notifications::push`] wraps it.
///
/// Implement it once per backend (the in-process
/// [`WakeBoard`](crate::backend::WakeBoard) has
/// [`notifications`](crate::backend::WakeBoard::notifications) ready).
pub trait PushSource: Send + Sync + 'static {
    /// Starts watching for `wake` NOW; the future completes once something
    /// relevant to it may have changed since this call.
    fn watch(&self, wake: &Wake) -> ChangeWatch;

    /// Starts a feed of the changes on `params.queues` NOW; it ends only
    /// when dropped. A source may pass other queues' changes on.
    fn feed(&self, params: &FeedParams) -> ChangeFeed;

    /// Resolves, with the reason, once this source stopped pushing for
    /// good. The default never resolves (a source that cannot be lost).
    fn lost(&self) -> WakeupsLost {
        Box::pin(std::future::pending())
    }
}

/// The handle [`Store::notifications`](super::Store::notifications) returns:
/// cheap to make and to clone, and every method subscribes when called.
#[derive(Clone)]
pub struct Notifications(Kind);

#[derive(Clone)]
enum Kind {
    /// No push notifications, and none to lose.
    None,
    /// No push notifications, for this reason (said once by workers).
    PollsOnly(Arc<Error>),
    /// A live push channel.
    Push(Arc<dyn PushSource>),
}

impl Notifications {
    /// A store without push notifications: watches never complete, the
    /// feed yields nothing, and [`lost`](Self::lost) never resolves.
    pub fn none() -> Self {
        Self(Kind::None)
    }

    /// A store that could have pushed but polls only, for `reason` (a
    /// pooler mode without a listen connection): like [`none`](Self::none),
    /// except that [`lost`](Self::lost) resolves at once with the reason.
    pub fn polls_only(reason: Error) -> Self {
        Self(Kind::PollsOnly(Arc::new(reason)))
    }

    /// Notifications from `source`.
    pub fn push(source: Arc<dyn PushSource>) -> Self {
        Self(Kind::Push(source))
    }

    /// Starts watching for `wake` NOW; the future completes once something
    /// relevant to it may have changed since this call. Take the watch
    /// before reading the store and await it (under a timeout) after, so a
    /// change that commits between the read and the wait still cuts the
    /// wait short. Without push notifications it never completes.
    pub fn watch(&self, wake: &Wake) -> ChangeWatch {
        match &self.0 {
            Kind::Push(source) => source.watch(wake),
            Kind::None | Kind::PollsOnly(_) => Box::pin(std::future::pending()),
        }
    }

    /// Starts a feed of the changes on `params.queues` NOW (like
    /// [`watch`](Self::watch), it subscribes when called): queued rows by
    /// queue, finished tasks by id, and [`Change::Unknown`](super::Change::Unknown)
    /// when the store knows only that something changed. It ends only when
    /// dropped. Without push notifications it yields nothing, ever
    /// (watchers then rely on their poll).
    pub fn feed(&self, params: &FeedParams) -> ChangeFeed {
        match &self.0 {
            Kind::Push(source) => source.feed(params),
            Kind::None | Kind::PollsOnly(_) => Box::pin(futures::stream::pending()),
        }
    }

    /// Why this store polls by design (built with
    /// [`polls_only`](Self::polls_only)), or `None`. A worker says so once,
    /// as a notice rather than a warning: the configuration asked for it.
    pub fn polls_only_reason(&self) -> Option<&Error> {
        match &self.0 {
            Kind::PollsOnly(reason) => Some(reason),
            Kind::None | Kind::Push(_) => None,
        }
    }

    /// Resolves, with the reason, once the store's push wakeups stopped for
    /// good (a LISTEN a connection pooler refuses, a role that may no longer
    /// connect, a pooler mode that never listens): from then on watches
    /// never complete and sleepers wake by their poll alone. Workers report
    /// it once. Never resolves for a store that never pushed.
    pub fn lost(&self) -> WakeupsLost {
        match &self.0 {
            Kind::Push(source) => source.lost(),
            Kind::PollsOnly(reason) => Box::pin(std::future::ready(reason.replicate())),
            Kind::None => Box::pin(std::future::pending()),
        }
    }
}

impl Default for Notifications {
    fn default() -> Self {
        Self::none()
    }
}

impl fmt::Debug for Notifications {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::None => f.write_str("Notifications::none"),
            Kind::PollsOnly(reason) => f.debug_tuple("Notifications::polls_only").field(&reason.to_string()).finish(),
            Kind::Push(_) => f.write_str("Notifications::push"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;

    use super::*;

    async fn within<F: std::future::Future>(future: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(50), future).await.ok()
    }

    #[tokio::test]
    async fn none_never_wakes_feeds_nothing_and_is_never_lost() {
        let none = Notifications::none();
        assert!(within(none.watch(&Wake::Queued(vec!["q".into()]))).await.is_none());
        assert!(within(none.feed(&FeedParams::new(vec!["q".into()])).next()).await.is_none());
        assert!(within(none.lost()).await.is_none());
        assert!(none.polls_only_reason().is_none());
    }

    #[tokio::test]
    async fn polls_only_says_why_at_once_and_never_wakes() {
        let reason = Error::Storage { message: "pooler mode".into(), source: None, transient: false };
        let polls = Notifications::polls_only(reason);
        assert_eq!(polls.polls_only_reason().map(Error::to_string).as_deref(), Some("storage error: pooler mode"));
        assert_eq!(within(polls.lost()).await.expect("at once").to_string(), "storage error: pooler mode");
        assert_eq!(within(polls.clone().lost()).await.expect("again").to_string(), "storage error: pooler mode");
        assert!(within(polls.watch(&Wake::TaskDone("t".into()))).await.is_none());
    }
}
