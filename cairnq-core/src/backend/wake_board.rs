//! Push wakeups inside one process, for any backend: a write that queued
//! tasks or finished them wakes the sleepers waiting for exactly that (an
//! idle worker on those queues, a `wait` on that task) and tells every open
//! change feed, so they react without waiting out a poll. Polling stays the
//! source of truth: a missed wakeup costs latency, never a task.
//!
//! A backend notes what each write changed in [`Changes`] while it writes,
//! and hands them to its [`WakeBoard`] once the write is visible to
//! readers (after the commit). Changes made where the board cannot see
//! them (another process's commits) reach sleepers through a
//! [`WakeSource`] the backend plugs in.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};

use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::backend::FeedHub;
use crate::model::{Task, TaskStatus};
use crate::store::{Change, ChangeFeed, ChangeWatch, FeedParams, Notifications, PushSource, Wake};

/// What one write changed, as far as sleepers care.
///
/// ```
/// use cairnq_core::backend::Changes;
/// let mut changes = Changes::default();
/// changes.queued_on("emails");
/// changes.queued_on("emails");
/// changes.finished("task_1", None);
/// assert_eq!(changes.queued(), ["emails"]);
/// assert!(!changes.is_empty());
/// ```
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changes {
    queued: Vec<String>,
    /// Tasks that became terminal, with their queue when the write knew it.
    done: Vec<(String, Option<String>)>,
}

impl Changes {
    /// Records a task as a write left it: queued is news for its queue,
    /// terminal for its waiters, running for nobody.
    pub fn saw(&mut self, task: &Task) {
        match task.status {
            TaskStatus::Queued => self.queued_on(&task.queue),
            TaskStatus::Running => {}
            _ => self.finished(task.id.clone(), Some(task.queue.clone())),
        }
    }

    /// Records that `queue` gained due work (once per queue).
    pub fn queued_on(&mut self, queue: &str) {
        if !self.queued.iter().any(|q| q == queue) {
            self.queued.push(queue.to_string());
        }
    }

    /// Records that the task became terminal.
    pub fn finished(&mut self, task_id: impl Into<String>, queue: Option<String>) {
        self.done.push((task_id.into(), queue));
    }

    /// Adds what another write changed.
    pub fn merge(&mut self, other: Changes) {
        other.queued.iter().for_each(|q| self.queued_on(q));
        self.done.extend(other.done);
    }

    /// The queues that gained due work.
    pub fn queued(&self) -> &[String] {
        &self.queued
    }

    /// The tasks that became terminal, in the order recorded.
    pub fn ended(&self) -> impl Iterator<Item = &str> {
        self.done.iter().map(|(id, _)| id.as_str())
    }

    /// Whether nothing a sleeper waits for changed.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.done.is_empty()
    }
}

/// Wakes from outside the board's own publishes (SQLite: other
/// processes' commits, which cannot say what they changed): every sleeper
/// subscribes to it too.
pub trait WakeSource: Send + Sync + fmt::Debug {
    /// Wakes `notify` (with `notify_one`) on the next change it sees. Held
    /// weakly: a dropped sleeper is forgotten at the next [`prune`](Self::prune).
    fn subscribe(&self, notify: &Arc<Notify>);

    /// Forgets sleepers whose `Notify` was dropped.
    fn prune(&self);
}

/// Sleepers by key (a queue name or a task id). Holds only weak
/// references, so a dropped watch leaves nothing to wake.
#[derive(Debug, Default)]
struct Channel(Mutex<HashMap<String, Vec<Weak<Notify>>>>);

impl Channel {
    fn subscribe(&self, keys: &[String], notify: &Arc<Notify>) {
        let mut map = self.0.lock();
        for key in keys {
            let sleepers = map.entry(key.clone()).or_default();
            sleepers.retain(|w| w.strong_count() > 0);
            sleepers.push(Arc::downgrade(notify));
        }
    }

    fn publish<'a>(&self, keys: impl Iterator<Item = &'a str>) {
        let woken: Vec<Arc<Notify>> = {
            let mut map = self.0.lock();
            keys.filter_map(|key| map.remove(key)).flatten().filter_map(|w| w.upgrade()).collect()
        };
        // notify_one stores a permit, so a sleeper that subscribed but is
        // not awaiting yet still wakes.
        woken.iter().for_each(|n| n.notify_one());
    }

    fn prune(&self, keys: &[String]) {
        let mut map = self.0.lock();
        for key in keys {
            if let Some(sleepers) = map.get_mut(key) {
                sleepers.retain(|w| w.strong_count() > 0);
                if sleepers.is_empty() {
                    map.remove(key);
                }
            }
        }
    }
}

/// Every sleeper and change feed of one store (or of every store of the
/// process on one database, when the backend shares it).
///
/// ```
/// # use std::sync::Arc;
/// # use cairnq_core::backend::{Changes, WakeBoard};
/// # use cairnq_core::Wake;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let board = Arc::new(WakeBoard::new());
/// let watch = board.watch(&Wake::Queued(vec!["emails".into()]));
/// let mut changes = Changes::default();
/// changes.queued_on("emails");
/// board.publish(&changes);
/// watch.await;
/// # }
/// ```
#[derive(Debug, Default)]
pub struct WakeBoard {
    queues: Channel,
    tasks: Channel,
    feeds: FeedHub,
    foreign: Option<Arc<dyn WakeSource>>,
}

impl WakeBoard {
    /// A board that hears only its own publishes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A board whose sleepers also wake on what `source` sees.
    pub fn with_source(source: Arc<dyn WakeSource>) -> Self {
        Self { foreign: Some(source), ..Self::default() }
    }

    /// Wakes the sleepers `changes` concern and tells the open feeds
    /// (call it once the changes are visible to readers).
    pub fn publish(&self, changes: &Changes) {
        self.queues.publish(changes.queued.iter().map(String::as_str));
        self.tasks.publish(changes.done.iter().map(|(id, _)| id.as_str()));
        if self.feeds.is_watched() {
            for queue in &changes.queued {
                self.feeds.publish(Change::Queued { queue: queue.clone() });
            }
            for (task_id, queue) in &changes.done {
                self.feeds.publish(Change::Finished { task_id: task_id.clone(), queue: queue.clone() });
            }
        }
    }

    /// A feed of every change published from now on, and of
    /// [`Change::Unknown`] for each change the [`WakeSource`] saw (it
    /// cannot say what changed).
    pub fn feed(self: &Arc<Self>) -> ChangeFeed {
        let local = self.feeds.feed();
        if self.foreign.is_none() {
            return local;
        }
        // Each foreign watch is taken before the previous one is reported,
        // so a change in between still ends the next.
        let board = Arc::clone(self);
        let first = board.watch(&Wake::Queued(Vec::new()));
        let foreign = futures::stream::unfold((board, first), |(board, watch)| async move {
            watch.await;
            let next = board.watch(&Wake::Queued(Vec::new()));
            Some((Change::Unknown, (board, next)))
        });
        futures::stream::select(local, foreign).boxed()
    }

    /// Subscribes now; the watch completes on the next relevant publish
    /// (or change the source sees) after this call.
    pub fn watch(self: &Arc<Self>, wake: &Wake) -> ChangeWatch {
        let (queues, keys) = match wake {
            Wake::Queued(queues) => (true, queues.clone()),
            Wake::TaskDone(id) => (false, vec![id.clone()]),
        };
        let subscription = Subscription { board: Arc::clone(self), queues, keys, notify: Arc::new(Notify::new()) };
        subscription.channel().subscribe(&subscription.keys, &subscription.notify);
        if let Some(foreign) = &self.foreign {
            foreign.subscribe(&subscription.notify);
        }
        Box::pin(async move { subscription.notify.notified().await })
    }
}

impl WakeBoard {
    /// This board as a store's [`Notifications`] (what
    /// [`Store::notifications`](crate::Store::notifications) returns for a
    /// store whose wakeups all pass through it): watches and feeds from
    /// the board, wakeups never lost.
    pub fn notifications(self: &Arc<Self>) -> Notifications {
        Notifications::push(Arc::new(BoardPush(Arc::clone(self))))
    }
}

/// A board as a [`PushSource`]: the board's watch and feed need the `Arc`
/// they live in, which a trait object's `&self` cannot give.
struct BoardPush(Arc<WakeBoard>);

impl PushSource for BoardPush {
    fn watch(&self, wake: &Wake) -> ChangeWatch {
        self.0.watch(wake)
    }

    // The board's feed carries every queue's changes; feed readers filter.
    fn feed(&self, _params: &FeedParams) -> ChangeFeed {
        self.0.feed()
    }
}

/// One watch's registrations, withdrawn when the watch is dropped (woken
/// or not), so a watch on a task that never finishes leaves nothing behind.
struct Subscription {
    board: Arc<WakeBoard>,
    queues: bool,
    keys: Vec<String>,
    notify: Arc<Notify>,
}

impl Subscription {
    fn channel(&self) -> &Channel {
        if self.queues { &self.board.queues } else { &self.board.tasks }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Drop the only strong reference first, so pruning sees this
        // sleeper as gone.
        drop(std::mem::replace(&mut self.notify, Arc::new(Notify::new())));
        self.channel().prune(&self.keys);
        if let Some(foreign) = &self.board.foreign {
            foreign.prune();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;

    #[tokio::test]
    async fn a_watch_wakes_for_its_own_key_only_and_a_dropped_one_leaves_nothing() {
        let board = Arc::new(WakeBoard::new());
        let mut other = board.watch(&Wake::TaskDone("b".into()));
        let done = board.watch(&Wake::TaskDone("a".into()));
        let mut changes = Changes::default();
        changes.finished("a", None);
        board.publish(&changes);
        tokio::time::timeout(Duration::from_secs(5), done).await.expect("woken");
        assert!((&mut other).now_or_never().is_none(), "another task's finish wakes nobody else");
        drop(other);
        assert!(board.tasks.0.lock().is_empty(), "a dropped watch is forgotten");
    }
}
