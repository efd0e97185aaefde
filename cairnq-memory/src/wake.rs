//! Push wakeups of [`MemoryStore`](super::MemoryStore): an operation that
//! queued tasks or finished them wakes the sleepers waiting for exactly
//! that (an idle worker on those queues, a `wait` on that task), so they
//! react without waiting out a poll. Polling stays the source of truth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use cairnq_core::backend::FeedHub;
use cairnq_core::store::{Change, ChangeFeed};
use cairnq_core::{ChangeWatch, Wake};
use tokio::sync::Notify;

use super::tables::Changes;

/// Sleepers by key (a queue name or a task id). Holds only weak
/// references, so a dropped watch leaves nothing to wake.
#[derive(Debug, Default)]
struct Channel(Mutex<HashMap<String, Vec<Weak<Notify>>>>);

impl Channel {
    fn sleepers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Weak<Notify>>>> {
        // The map stays consistent whatever a panicking holder did (each
        // step is one insert or remove), so a poisoned lock is still usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn subscribe(&self, keys: &[String], notify: &Arc<Notify>) {
        let mut map = self.sleepers();
        for key in keys {
            let sleepers = map.entry(key.clone()).or_default();
            sleepers.retain(|w| w.strong_count() > 0);
            sleepers.push(Arc::downgrade(notify));
        }
    }

    fn publish(&self, keys: &[String]) {
        let woken: Vec<Arc<Notify>> = {
            let mut map = self.sleepers();
            keys.iter().filter_map(|key| map.remove(key)).flatten().filter_map(|w| w.upgrade()).collect()
        };
        // notify_one stores a permit, so a sleeper that subscribed but is
        // not awaiting yet still wakes.
        woken.iter().for_each(|n| n.notify_one());
    }

    fn prune(&self, keys: &[String]) {
        let mut map = self.sleepers();
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

/// Every sleeper and change feed of one store.
#[derive(Debug, Default)]
pub(super) struct Sleepers {
    queues: Channel,
    tasks: Channel,
    feeds: FeedHub,
}

impl Sleepers {
    /// Wakes the sleepers `changes` concern (called once the operation's
    /// writes are visible to readers).
    pub(super) fn publish(&self, changes: &Changes) {
        self.queues.publish(&changes.queued);
        let done: Vec<String> = changes.done.iter().map(|(id, _)| id.clone()).collect();
        self.tasks.publish(&done);
        for queue in &changes.queued {
            self.feeds.publish(Change::Queued { queue: queue.clone() });
        }
        for (task_id, queue) in &changes.done {
            self.feeds.publish(Change::Finished { task_id: task_id.clone(), queue: Some(queue.clone()) });
        }
    }

    /// A feed of every change from now on (the caller filters by queue).
    pub(super) fn feed(&self) -> ChangeFeed {
        self.feeds.feed()
    }

    /// Subscribes now; the watch completes on the next relevant publish
    /// after this call. A kind of wake this build does not know never
    /// completes (its sleeper polls).
    pub(super) fn watch(self: &Arc<Self>, wake: &Wake) -> ChangeWatch {
        let (queues, keys) = match wake {
            Wake::Queued(queues) => (true, queues.clone()),
            Wake::TaskDone(id) => (false, vec![id.clone()]),
            _ => return Box::pin(std::future::pending()),
        };
        let subscription = Subscription { sleepers: Arc::clone(self), queues, keys, notify: Arc::new(Notify::new()) };
        subscription.channel().subscribe(&subscription.keys, &subscription.notify);
        Box::pin(async move { subscription.notify.notified().await })
    }
}

/// One watch's registrations, withdrawn when the watch is dropped (woken
/// or not), so a watch on a task that never finishes leaves nothing behind.
struct Subscription {
    sleepers: Arc<Sleepers>,
    queues: bool,
    keys: Vec<String>,
    notify: Arc<Notify>,
}

impl Subscription {
    fn channel(&self) -> &Channel {
        if self.queues { &self.sleepers.queues } else { &self.sleepers.tasks }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Drop the only strong reference first, so pruning sees this
        // sleeper as gone.
        drop(std::mem::replace(&mut self.notify, Arc::new(Notify::new())));
        self.channel().prune(&self.keys);
    }
}
