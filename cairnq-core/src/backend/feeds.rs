//! Change feeds for backend authors: [`FeedHub`] fans what a store's writes
//! changed out to every open [`ChangeFeed`], and [`broadcast_feed`] turns
//! any broadcast receiver into one, so each backend writes only where its
//! changes come from.

use tokio::sync::broadcast::{self, error::RecvError};

use crate::store::{Change, ChangeFeed};

/// Changes a lagging feed may fall behind by before it is told
/// [`Change::Unknown`] instead.
const BACKLOG: usize = 1024;

/// One store's open change feeds. Publishing with no feed open costs a
/// counter read.
#[derive(Debug, Clone)]
pub struct FeedHub {
    changes: broadcast::Sender<Change>,
}

impl Default for FeedHub {
    fn default() -> Self {
        Self { changes: broadcast::Sender::new(BACKLOG) }
    }
}

impl FeedHub {
    /// No feed open yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether any feed is open (so a writer can skip building changes).
    pub fn is_watched(&self) -> bool {
        self.changes.receiver_count() > 0
    }

    /// Hands `change` to every open feed (call it once the change is
    /// visible to readers).
    pub fn publish(&self, change: Change) {
        if self.is_watched() {
            // No receiver left since the check: nobody to tell.
            let _ = self.changes.send(change);
        }
    }

    /// A feed of every change published from now on.
    pub fn feed(&self) -> ChangeFeed {
        broadcast_feed(self.changes.subscribe(), Some)
    }
}

/// A feed of what `receiver` gets, each message mapped by `to_change`
/// (`None` leaves it out); a receiver that fell behind yields
/// [`Change::Unknown`] (what it missed is unknown), a closed channel ends
/// the feed.
pub fn broadcast_feed<T, F>(receiver: broadcast::Receiver<T>, to_change: F) -> ChangeFeed
where
    T: Clone + Send + 'static,
    F: Fn(T) -> Option<Change> + Send + Sync + 'static,
{
    Box::pin(futures::stream::unfold((receiver, to_change), |(mut receiver, to_change)| async move {
        loop {
            let change = match receiver.recv().await {
                Ok(message) => to_change(message),
                Err(RecvError::Lagged(_)) => Some(Change::Unknown),
                Err(RecvError::Closed) => return None,
            };
            if let Some(change) = change {
                return Some((change, (receiver, to_change)));
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn a_feed_gets_what_is_published_after_it_opened_and_unknown_when_it_lagged() {
        let hub = FeedHub::new();
        hub.publish(Change::Unknown);
        assert!(!hub.is_watched());
        let mut feed = hub.feed();
        assert!(hub.is_watched());
        hub.publish(Change::Queued { queue: "a".into() });
        assert_eq!(feed.next().await, Some(Change::Queued { queue: "a".into() }));
        for n in 0..=BACKLOG {
            hub.publish(Change::Finished { task_id: n.to_string(), queue: None });
        }
        assert_eq!(feed.next().await, Some(Change::Unknown), "fell behind: told so");
        drop(feed);
        assert!(!hub.is_watched(), "a dropped feed is gone");
    }
}
