//! The worker's shared bookkeeping: each claimed task's flags (settled,
//! lease lost, cancel requested), the set of leases the heartbeat renews,
//! and the load (calls, per-name calls, resource use, payload bytes) the
//! claim loop sizes its next claim from.
//!
//! Load is released by a guard's `Drop`, so a handler that panics or is
//! aborted at the drain timeout still frees its slot.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::observe::Attempt;
use tokio::sync::{Notify, watch};

/// One claimed task's flags, shared by its context, the call that runs it
/// and the heartbeat loop.
#[derive(Debug)]
pub(crate) struct TaskState {
    settled: AtomicBool,
    lost: watch::Sender<bool>,
    canceled: watch::Sender<bool>,
    /// When the store last told us whether a cancel is pending (the claim,
    /// then each heartbeat that renewed the lease).
    cancel_checked: Mutex<Instant>,
    /// The attempt's telemetry (its span, and what its end is counted as).
    pub(crate) attempt: Attempt,
}

impl TaskState {
    pub(crate) fn new(cancel_requested: bool, attempt: Attempt) -> Self {
        Self {
            settled: AtomicBool::new(false),
            lost: watch::Sender::new(false),
            canceled: watch::Sender::new(cancel_requested),
            cancel_checked: Mutex::new(Instant::now()),
            attempt,
        }
    }

    /// The store answered the cancel question just now.
    pub(crate) fn cancel_checked(&self) {
        *self.cancel_checked.lock() = Instant::now();
    }

    /// How long ago the store last answered the cancel question.
    pub(crate) fn since_cancel_checked(&self) -> Duration {
        self.cancel_checked.lock().elapsed()
    }

    /// Claims the right to settle: true exactly once.
    pub(crate) fn begin_settle(&self) -> bool {
        !self.settled.swap(true, Ordering::AcqRel)
    }

    /// Gives back a settle claim whose write wrote nothing (the
    /// application's transaction failed before the settle): the handler's
    /// return then settles the task as usual.
    pub(crate) fn give_back_settle(&self) {
        self.settled.store(false, Ordering::Release);
    }

    pub(crate) fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// Marks the attempt lease-lost; true the first time.
    pub(crate) fn mark_lost(&self) -> bool {
        !self.lost.send_replace(true)
    }

    pub(crate) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    pub(crate) fn mark_canceled(&self) {
        self.canceled.send_replace(true);
    }

    pub(crate) fn is_canceled(&self) -> bool {
        *self.canceled.borrow()
    }

    pub(crate) async fn lost_signal(&self) {
        raised(&self.lost).await;
    }

    pub(crate) async fn cancel_signal(&self) {
        raised(&self.canceled).await;
    }
}

async fn raised(flag: &watch::Sender<bool>) {
    let mut rx = flag.subscribe();
    // The sender lives as long as `flag`, so `wait_for` only ends when raised.
    let _ = rx.wait_for(|on| *on).await;
}

/// The unsettled tasks whose leases the heartbeat loop renews.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<String, Arc<TaskState>>>,
}

impl Leases {
    /// Holds a claimed attempt's lease; returns the attempt of the same
    /// task this worker still held, if any. That one's lease lapsed
    /// unnoticed (a heartbeat failed) and this worker's own claim took the
    /// task again: the caller marks it lost, or its result would be
    /// written under the new attempt's lease. One window stays open: a
    /// settle of the earlier attempt already sent when the claim committed
    /// lands under the new lease (the protocol checks worker and lease, not
    /// the attempt). The task then ends with that attempt's result and the
    /// new attempt finds its lease lost: run at least once, nothing lost.
    pub(crate) fn insert(&self, task_id: &str, state: Arc<TaskState>) -> Option<Arc<TaskState>> {
        self.held.lock().insert(task_id.to_string(), state)
    }

    /// Stops renewing `state`'s lease, unless a later attempt of the same
    /// task holds it now (an earlier attempt ending must not drop it).
    pub(crate) fn remove(&self, task_id: &str, state: &TaskState) {
        let mut held = self.held.lock();
        if held.get(task_id).is_some_and(|now| std::ptr::eq(Arc::as_ptr(now), state)) {
            held.remove(task_id);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<(String, Arc<TaskState>)> {
        self.held.lock().iter().map(|(id, s)| (id.clone(), s.clone())).collect()
    }
}

/// What one running call holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallLoad {
    pub(crate) name: String,
    pub(crate) resource: Option<String>,
    pub(crate) tasks: u32,
    pub(crate) bytes: u64,
}

#[derive(Debug, Default)]
struct Totals {
    calls: usize,
    by_name: HashMap<String, usize>,
    by_resource: HashMap<String, u32>,
    bytes: u64,
    bytes_seen: u64,
    payloads_seen: u64,
}

/// The worker's current load; `freed` is notified whenever a call ends.
/// It also keeps a moving mean of how long handler calls take (the claim
/// loop sizes its prefetch from it).
#[derive(Debug, Default)]
pub(crate) struct Load {
    totals: Mutex<Totals>,
    pub(crate) freed: Notify,
    mean_call_nanos: AtomicU64,
}

/// A read of the load for sizing one claim.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadView {
    pub(crate) calls: usize,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) by_resource: HashMap<String, u32>,
    pub(crate) bytes: u64,
    /// Mean payload size seen so far (`None` before the first claim).
    pub(crate) mean_payload: Option<u64>,
}

impl Load {
    pub(crate) fn view(&self) -> LoadView {
        let t = self.totals.lock();
        LoadView {
            calls: t.calls,
            by_name: t.by_name.clone(),
            by_resource: t.by_resource.clone(),
            bytes: t.bytes,
            mean_payload: t.bytes_seen.checked_div(t.payloads_seen),
        }
    }

    /// Handler calls running now.
    pub(crate) fn calls(&self) -> usize {
        self.totals.lock().calls
    }

    /// The moving mean duration of handler calls (zero before the first).
    pub(crate) fn mean_call(&self) -> Duration {
        Duration::from_nanos(self.mean_call_nanos.load(Ordering::Relaxed))
    }

    /// Folds one call's duration into the moving mean (weight 1/8). Two
    /// calls ending at once may lose one sample: harmless for an estimate.
    pub(crate) fn record_call(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let mean = self.mean_call_nanos.load(Ordering::Relaxed);
        let next = if mean == 0 { sample } else { mean - mean / 8 + sample / 8 };
        self.mean_call_nanos.store(next, Ordering::Relaxed);
    }

    /// Records a call starting; the guard releases it when dropped.
    pub(crate) fn start(self: &Arc<Self>, call: CallLoad) -> CallGuard {
        let mut t = self.totals.lock();
        t.calls += 1;
        *t.by_name.entry(call.name.clone()).or_default() += 1;
        if let Some(r) = &call.resource {
            *t.by_resource.entry(r.clone()).or_default() += call.tasks;
        }
        t.bytes += call.bytes;
        t.bytes_seen += call.bytes;
        t.payloads_seen += u64::from(call.tasks);
        CallGuard { load: self.clone(), call }
    }

    fn release(&self, call: &CallLoad) {
        let mut t = self.totals.lock();
        t.calls = t.calls.saturating_sub(1);
        if let Some(n) = t.by_name.get_mut(&call.name) {
            *n = n.saturating_sub(1);
        }
        if let Some(r) = call.resource.as_ref().and_then(|r| t.by_resource.get_mut(r)) {
            *r = r.saturating_sub(call.tasks);
        }
        t.bytes = t.bytes.saturating_sub(call.bytes);
        drop(t);
        self.freed.notify_one();
    }
}

/// Holds one call's load until dropped.
#[derive(Debug)]
pub(crate) struct CallGuard {
    load: Arc<Load>,
    call: CallLoad,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.load.release(&self.call);
    }
}
