//! In-process push wakeups: a commit that queued tasks or finished them
//! wakes the sleepers of this process that wait for exactly that (on any
//! store sharing the database's writer), so
//! `wait`/`call` and idle workers react without waiting out a poll.
//! Commits of other processes reach sleepers through the
//! [`CommitWatch`](crate::commit_watcher::CommitWatch). Polling stays the source of
//! truth.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use cairnq_core::backend::FeedHub;
use cairnq_core::store::{Change, ChangeFeed};
use cairnq_core::{ChangeWatch, Task, TaskStatus, Wake};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::commit_watcher::CommitWatch;

/// What one committed write changed, as far as sleepers care.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    queued: Vec<String>,
    /// Tasks that became terminal, with their queue when the write knew it.
    done: Vec<(String, Option<String>)>,
}

impl Changes {
    /// Records a row a statement returned after writing it.
    pub(crate) fn saw(&mut self, task: &Task) {
        match task.status {
            TaskStatus::Queued => self.queued_on(&task.queue),
            TaskStatus::Running => {}
            _ => self.done.push((task.id.clone(), Some(task.queue.clone()))),
        }
    }

    pub(crate) fn queued_on(&mut self, queue: &str) {
        if !self.queued.iter().any(|q| q == queue) {
            self.queued.push(queue.to_string());
        }
    }

    pub(crate) fn finished(&mut self, task_id: String, queue: Option<String>) {
        self.done.push((task_id, queue));
    }

    pub(crate) fn merge(&mut self, other: Changes) {
        other.queued.iter().for_each(|q| self.queued_on(q));
        self.done.extend(other.done);
    }
}

/// Sleepers by key (a queue name or a task id).
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

    fn publish(&self, keys: &[String]) {
        let mut map = self.0.lock();
        for key in keys {
            if let Some(sleepers) = map.remove(key) {
                // notify_one stores a permit, so a sleeper that subscribed
                // but is not yet awaiting still wakes.
                sleepers.iter().filter_map(Weak::upgrade).for_each(|n| n.notify_one());
            }
        }
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

/// Every sleeper and change feed of one database: of every store of this
/// process on it.
#[derive(Debug, Default)]
pub(crate) struct WakeBoard {
    queues: Channel,
    tasks: Channel,
    feeds: FeedHub,
    /// Wakes every sleeper on another connection's commit (when enabled).
    foreign: Option<Arc<CommitWatch>>,
}

impl WakeBoard {
    pub(crate) fn new(foreign: Option<Arc<CommitWatch>>) -> Self {
        Self { foreign, ..Self::default() }
    }

    /// Wakes the sleepers `changes` concern (called after the commit).
    pub(crate) fn publish(&self, changes: &Changes) {
        self.queues.publish(&changes.queued);
        let done: Vec<String> = changes.done.iter().map(|(id, _)| id.clone()).collect();
        self.tasks.publish(&done);
        if self.feeds.is_watched() {
            for queue in &changes.queued {
                self.feeds.publish(Change::Queued { queue: queue.clone() });
            }
            for (task_id, queue) in &changes.done {
                self.feeds.publish(Change::Finished { task_id: task_id.clone(), queue: queue.clone() });
            }
        }
    }

    /// A feed of this process's changes from now on, and of
    /// [`Change::Unknown`] for each commit the cross-process watcher saw
    /// (it cannot say what another connection changed).
    pub(crate) fn feed(self: &Arc<Self>) -> ChangeFeed {
        let local = self.feeds.feed();
        if self.foreign.is_none() {
            return local;
        }
        // Each foreign watch is taken before the previous one is reported,
        // so a commit in between still ends the next.
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
    /// (or foreign commit) after this call.
    pub(crate) fn watch(self: &Arc<Self>, wake: &Wake) -> ChangeWatch {
        let keys = match wake {
            Wake::Queued(queues) => queues.clone(),
            Wake::TaskDone(id) => vec![id.clone()],
            _ => Vec::new(),
        };
        let queues = matches!(wake, Wake::Queued(_));
        let notify = Arc::new(Notify::new());
        let subscription = Subscription { board: Arc::clone(self), queues, keys, notify };
        subscription.channel().subscribe(&subscription.keys, &subscription.notify);
        if let Some(foreign) = &self.foreign {
            foreign.subscribe(&subscription.notify);
        }
        Box::pin(async move { subscription.notify.notified().await })
    }
}

/// One watch's registrations, withdrawn when the watch is dropped (woken
/// or not).
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
        // The channels hold only weak references: once the last strong one
        // is gone, pruning forgets this sleeper.
        drop(std::mem::replace(&mut self.notify, Arc::new(Notify::new())));
        self.channel().prune(&self.keys);
        if let Some(foreign) = &self.board.foreign {
            foreign.prune();
        }
    }
}
