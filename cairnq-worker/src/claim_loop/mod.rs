//! The claim loop: probe, claim, dispatch, and wait only when there is
//! nothing to do.
//!
//! Each round sizes a claim from the current load ([`plan_claim`]); with no
//! room it waits for a call to end (a freed slot triggers the next claim at
//! once). With room it asks the read-only probe first, so an idle worker
//! never takes the write lock, then runs one claim transaction. The probe is
//! skipped right after a claim that took every row it could (more than
//! one): work was due a moment ago, so the probe would only cost a read.
//! When idle the loop sleeps on a watch
//! ([`Store::notifications`](cairnq_core::Store::notifications)) taken
//! BEFORE the probe read the store, so a push wakeup for a submit that
//! committed between the probe and the sleep still cuts the poll short. A
//! claim that took nothing asks when a rate limit that held work back at
//! the claim next admits a start
//! ([`Store::limit_wait`](cairnq_core::Store::limit_wait)) and sleeps no
//! longer than that (not at all when the rate opened since the claim):
//! rate-limited work starts at its rate, not a poll's.
//!
//! # Prefetch
//!
//! A claim and a settle each wait for a commit, so a worker that claims
//! only its free slots runs at most about `concurrency` tasks per commit.
//! When every name shares one draw (no per-name `batch`, `concurrency` or
//! resource, no byte budget), a claim may take more rows than free slots:
//! the extra rows wait in a local buffer, their leases renewed by the
//! heartbeat like running ones, and start as slots free. The claim runs
//! alongside the calls (one claim in flight at a time), so handlers keep
//! running from the buffer while the next claim commits. The room beyond
//! the slots is what the slots get through in two claim round-trips (2 x
//! concurrency x last claim's duration / mean handler call), or in
//! [`PREFETCH_HORIZON`] if that is more, at most [`MAX_PREFETCH`]. Fast
//! handlers get a deep buffer; handlers of a few milliseconds (a process
//! per task, `--exec`) still claim several tasks per commit instead of one
//! (a claim's commit costs more than a spawn's share of the CPU); handlers
//! slower than the horizon per slot get none, so a slow worker does not
//! hoard tasks another worker could run: a buffered task waits at most
//! about the horizon for a slot. A buffered task whose lease the heartbeat
//! finds lost is dropped unstarted.
//!
//! # A failing store
//!
//! A failed probe or claim does not make the loop poll faster or at the
//! same pace: the next claim waits a capped exponential backoff with equal
//! jitter — the poll interval for the first failure, doubling up to 30 s
//! ([`claim_backoff`]) — and the first success resets it. The failure
//! goes to [`Shared::store_failed`], which stops the whole worker when
//! waiting will not help (see [`OnUnusable`](crate::OnUnusable)). Buffered
//! tasks still start while the claims back off: they were claimed before.
//!
//! # Stop
//!
//! On stop the loop stops claiming, waits for a claim in flight (its write
//! cannot be withdrawn), and then RUNS the buffered tasks as slots free,
//! within the drain timeout, rather than releasing them: a release through
//! `fail` would record an error and use up an attempt (and fail outright a
//! task on its last attempt), and the buffer holds only a few claim
//! round-trips of work of handlers that proved fast. Past the drain timeout,
//! running calls are abandoned and buffered tasks dropped; their leases
//! expire as before, and only then does the heartbeat stop. A stop caused
//! by an unusable database drops the buffered tasks at once instead: their
//! results could not be written, so running them would only repeat their
//! side effects when another worker retries them.

mod dispatch;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnq_core::store::{ClaimParams, ProbeParams};
use cairnq_core::{Backoff, ChangeWatch, Task, Wake};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::claim_plan::{NameTable, plan_claim};
use crate::context::TaskContext;
use crate::handler::Handler;
use crate::heartbeat::heartbeat_loop;
use crate::issue::Phase;
use crate::options::TaskOptions;
use crate::repair::repair_loop;
use crate::schedules::schedule_loop;
use crate::shared::Shared;
use crate::stop::StopLevel;
use crate::wakeups::report_lost_wakeups;

/// The most rows a worker buffers beyond its free call slots.
pub(crate) const MAX_PREFETCH: usize = 1024;

/// The work a worker may buffer whatever its claims cost: what its slots
/// get through in this time (see the module docs).
const PREFETCH_HORIZON: Duration = Duration::from_millis(25);

/// The most calls whose handlers are done but whose settle writes are not:
/// a call's slot frees before its write (see `call`), so a store slower at
/// settling than the handlers are at finishing would otherwise let claimed,
/// unsettled tasks pile up without bound. Past this the loop claims nothing
/// until writes catch up.
const MAX_SETTLING: usize = 1024;

/// The longest pause between failing claims (unless the poll interval is
/// longer).
const CLAIM_BACKOFF_CAP: Duration = Duration::from_secs(30);

/// The pause before the next claim after `failures` failed ones in a row:
/// equal jitter over a window of the poll interval doubled per failure,
/// capped at [`CLAIM_BACKOFF_CAP`] — the first pause is half to one poll
/// interval, as an idle poll would be.
fn claim_backoff(poll: Duration, failures: u32) -> Duration {
    let base = poll.max(Duration::from_millis(1));
    Backoff::new(base, CLAIM_BACKOFF_CAP.max(base)).delay(failures)
}

/// A watch, taken now, for tasks becoming queued on the worker's queues.
fn queued_watch(core: &Shared) -> ChangeWatch {
    core.session.notifications().watch(&Wake::Queued(core.options.queues.clone()))
}

/// A handler with its per-name options.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) handler: Handler,
    pub(crate) options: TaskOptions,
}

/// Every registered handler: one per name, and the fallback that runs
/// every other name (its worker then claims every name on its queues).
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) by_name: HashMap<String, Registered>,
    pub(crate) fallback: Option<Registered>,
}

impl Handlers {
    /// The handler that runs `name`: its own, else the fallback.
    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.by_name.get(name).or(self.fallback.as_ref())
    }
}

/// How a claim in flight ended.
enum Claimed {
    /// Rows were taken; `filled`: as many as the plan allowed.
    Rows { tasks: Vec<Task>, filled: bool },
    /// The claim took nothing (a left-out draw may still find some; a rate
    /// limit may admit a start after `rate_wait`).
    Empty { left_out_draws: bool, rate_wait: Option<Duration> },
    /// The probe found nothing due.
    NothingDue,
    /// The store failed during this step (the probe or the claim).
    Failed(Phase, cairnq_core::Error),
}

/// What to do after a step.
enum Next {
    /// Look again at once.
    Go,
    /// Nothing to take: sleep up to this long (the poll interval, or less
    /// while a rate limit is about to admit a start), or until woken.
    Idle(Duration),
}

pub(crate) struct ClaimLoop {
    core: Arc<Shared>,
    handlers: Arc<Handlers>,
    names: NameTable,
    stop: watch::Receiver<StopLevel>,
    calls: JoinSet<()>,
    rotation: usize,
    empty_retries: usize,
    /// Claimed tasks waiting for a free slot.
    buffer: VecDeque<TaskContext>,
    /// The claim running alongside the calls, and when it started.
    in_flight: Option<(BoxFuture<'static, Claimed>, Instant)>,
    /// Room for rows beyond the free slots in the next claim.
    prefetch: usize,
    /// Whether the next claim asks the probe first.
    probe_next: bool,
    /// Taken before a probe reads the store, awaited if the loop then goes
    /// idle: a submit committed between the probe and the sleep still ends
    /// the sleep.
    watch: Option<ChangeWatch>,
    /// Failed claims (or probes) in a row.
    claim_failures: u32,
    /// No claim starts before this, while claims fail.
    claim_after: Option<tokio::time::Instant>,
    /// The last claim failed because the database was unreachable: the
    /// pause ends as soon as any call of the process reaches it again.
    unreachable: bool,
}

impl ClaimLoop {
    pub(crate) fn new(
        core: Arc<Shared>,
        handlers: Handlers,
        names: NameTable,
        stop: watch::Receiver<StopLevel>,
    ) -> Self {
        let handlers = Arc::new(handlers);
        Self {
            core,
            handlers,
            names,
            stop,
            calls: JoinSet::new(),
            rotation: 0,
            empty_retries: 0,
            buffer: VecDeque::new(),
            in_flight: None,
            prefetch: 0,
            probe_next: true,
            watch: None,
            claim_failures: 0,
            claim_after: None,
            unreachable: false,
        }
    }

    /// Runs until stopped, then drains.
    pub(crate) async fn run(mut self) {
        let (heartbeat_stop, heartbeat_stopped) = watch::channel(false);
        let repair = tokio::spawn(repair_loop(self.core.clone(), heartbeat_stopped.clone()));
        let schedules = tokio::spawn(schedule_loop(self.core.clone(), heartbeat_stopped.clone()));
        let wakeups = tokio::spawn(report_lost_wakeups(self.core.clone(), heartbeat_stopped.clone()));
        let heartbeat = tokio::spawn(heartbeat_loop(self.core.clone(), heartbeat_stopped));
        self.claim_until_stopped().await;
        self.drain().await;
        heartbeat_stop.send_replace(true);
        let _ = tokio::join!(heartbeat, repair, schedules, wakeups);
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow() > StopLevel::Running
    }

    async fn claim_until_stopped(&mut self) {
        while !self.stopped() {
            while self.calls.try_join_next().is_some() {}
            self.start_buffered();
            if self.in_flight.is_none() && !self.start_claim() {
                self.pause(None).await;
                continue;
            }
            let next = self.await_claim_or_freed().await;
            if let Next::Idle(pause) = next {
                self.pause(Some(pause)).await;
            }
        }
    }

    /// Waits for the claim in flight to finish, a call to end, or a stop.
    async fn await_claim_or_freed(&mut self) -> Next {
        let core = self.core.clone();
        let mut stop = self.stop.clone();
        let Some((claim, _)) = self.in_flight.as_mut() else { return Next::Go };
        let claimed = tokio::select! {
            claimed = claim => claimed,
            _ = core.load.freed.notified() => return Next::Go,
            _ = stop.wait_for(|s| *s > StopLevel::Running) => return Next::Go,
        };
        self.finish_claim(claimed)
    }

    /// Waits for a freed slot (`None`) or up to `idle` for a change, and
    /// always for a stop.
    async fn pause(&mut self, idle: Option<Duration>) {
        let core = self.core.clone();
        let watch = self.watch.take();
        let mut stop = self.stop.clone();
        let stopped = stop.wait_for(|s| *s > StopLevel::Running);
        // Bounded by the poll interval too: a cap that no running call
        // holds (a resource of capacity 0) frees nothing. While claims back
        // off, until the next claim may start instead.
        let now = tokio::time::Instant::now();
        let wake_at = match self.claim_after {
            Some(at) if at > now => at,
            // Passed already (the claim was held back for another reason):
            // a time in the past would make this wait spin.
            _ => now + core.options.poll_interval,
        };
        match idle {
            None => tokio::select! {
                _ = core.load.freed.notified() => {},
                // A call whose settle write finished (see MAX_SETTLING).
                _ = self.calls.join_next(), if !self.calls.is_empty() => {},
                _ = tokio::time::sleep_until(wake_at) => {},
                _ = core.outage().reachable(), if self.unreachable => {},
                _ = stopped => {},
            },
            // A call ending may unblock a resource or a per-name cap that
            // left due work queued, so it ends an idle wait too.
            Some(timeout) => {
                let watch = watch.unwrap_or_else(|| queued_watch(&core));
                tokio::select! {
                    _ = tokio::time::timeout(timeout, watch) => {},
                    _ = core.load.freed.notified() => {},
                    _ = stopped => {},
                }
            }
        }
    }

    /// Plans and starts the next claim; false when there is no room (or
    /// the buffer still holds more than half the prefetch room).
    fn start_claim(&mut self) -> bool {
        if self.buffer.len() > self.prefetch / 2 || self.calls.len() >= self.core.options.concurrency + MAX_SETTLING {
            return false;
        }
        let outage_over = self.unreachable && !self.core.outage().is_down();
        match self.claim_after {
            Some(at) if tokio::time::Instant::now() < at && !outage_over => return false,
            _ => self.claim_after = None,
        }
        let core = self.core.clone();
        let mut view = core.load.view();
        view.calls += self.buffer.len();
        let prefetch = if self.may_prefetch() { self.prefetch } else { 0 };
        let Some(plan) = plan_claim(&core.options, &core.worker_id, &self.names, self.rotation, &view, prefetch) else {
            return false;
        };
        self.rotation = self.rotation.wrapping_add(1);
        let probe = self.probe_next.then(|| {
            let probe = ProbeParams::new(core.options.queues.clone());
            match self.names.probe_names() {
                Some(names) => probe.names(names),
                None => probe,
            }
        });
        // Only before a probe: a loop that keeps filling its claims never
        // goes idle, and a watch held there would keep SQLite's commit
        // watcher polling for nothing.
        self.watch = probe.as_ref().map(|_| queued_watch(&core));
        let claim = claim_rows(core.clone(), probe, plan.params, plan.max_rows, plan.left_out_draws);
        self.in_flight = Some((claim.boxed(), Instant::now()));
        true
    }

    fn may_prefetch(&self) -> bool {
        self.names.only_shared() && self.core.options.max_in_flight_bytes.is_none()
    }

    /// Takes in what a finished claim found and says what to do next.
    fn finish_claim(&mut self, claimed: Claimed) -> Next {
        if let Some((_, started)) = self.in_flight.take() {
            self.prefetch = prefetch_room(self.core.options.concurrency, started.elapsed(), self.core.load.mean_call());
        }
        if !matches!(claimed, Claimed::Failed(..)) {
            (self.claim_failures, self.unreachable) = (0, false);
            self.core.store_ok();
        }
        match claimed {
            Claimed::Rows { tasks, filled } => {
                self.watch = None;
                self.empty_retries = 0;
                self.probe_next = !filled;
                self.dispatch(tasks);
                self.start_buffered();
                Next::Go
            }
            Claimed::Empty { left_out_draws, rate_wait } => {
                self.probe_next = true;
                self.empty_round(left_out_draws, rate_wait)
            }
            Claimed::NothingDue => {
                self.probe_next = true;
                Next::Idle(self.core.options.poll_interval)
            }
            Claimed::Failed(phase, error) => {
                self.probe_next = true;
                self.back_off(phase, error);
                Next::Go
            }
        }
    }

    /// A failed probe or claim: no claim starts before the backoff pause
    /// ([`claim_backoff`]) has passed (`start_claim` checks, `pause` sleeps
    /// until then) or, when the database was unreachable, before another
    /// call of the process reaches it again; the core reports it (and
    /// stops the worker if the database is unusable).
    fn back_off(&mut self, phase: Phase, error: cairnq_core::Error) {
        self.claim_failures = self.claim_failures.saturating_add(1);
        let pause = claim_backoff(self.core.options.poll_interval, self.claim_failures);
        self.claim_after = Some(tokio::time::Instant::now() + pause);
        self.unreachable = error.is_unreachable();
        self.core.store_failed(phase, None, error);
    }

    /// A claim found nothing. If limits left draws out, the next rotation
    /// may include them: retry at once, at most once per draw. Else idle a
    /// poll, or only until a rate limit (flow control) admits a start.
    fn empty_round(&mut self, left_out_draws: bool, rate_wait: Option<Duration>) -> Next {
        if left_out_draws && self.empty_retries < self.names.own.len() {
            self.empty_retries += 1;
            return Next::Go;
        }
        self.empty_retries = 0;
        let poll = self.core.options.poll_interval;
        Next::Idle(rate_wait.map_or(poll, |wait| wait.min(poll)))
    }
}

/// One claim step, run alongside the calls: the probe (unless skipped),
/// then the claim transaction.
async fn claim_rows(
    core: Arc<Shared>,
    probe: Option<ProbeParams>,
    params: ClaimParams,
    max_rows: usize,
    left_out_draws: bool,
) -> Claimed {
    if let Some(probe) = probe {
        match core.session.probe(&probe).await {
            Ok(true) => {}
            Ok(false) => return Claimed::NothingDue,
            Err(error) => return Claimed::Failed(Phase::Probe, error),
        }
    }
    let ClaimParams { draws, budgets, .. } = params;
    let began = Instant::now();
    match core.session.claim(draws, budgets).await {
        Ok(tasks) if tasks.is_empty() => {
            // Due work the claim passed over may be held back by a rate
            // limit: ask when it admits (a hint; a failed read is no wait),
            // counting from the claim, so a rate that opened since says
            // "claim again now" rather than nothing (a poll's sleep).
            let rate_wait = core.session.next_rate_admit(began).await.ok().flatten();
            Claimed::Empty { left_out_draws, rate_wait }
        }
        Ok(tasks) => {
            // One row of one says little about what is left; skipping the
            // probe then would cost a lone worker an empty claim per task.
            let filled = tasks.len() >= max_rows && max_rows > 1;
            Claimed::Rows { tasks, filled }
        }
        Err(error) => Claimed::Failed(Phase::Claim, error),
    }
}

/// Rows worth buffering beyond the free slots: what `concurrency` slots get
/// through in two claims of `claim_took` or in [`PREFETCH_HORIZON`],
/// whichever is longer, given calls of `mean_call` (none before any call
/// has ended).
fn prefetch_room(concurrency: usize, claim_took: Duration, mean_call: Duration) -> usize {
    if mean_call.is_zero() {
        return 0;
    }
    let per_slot = (2 * claim_took).max(PREFETCH_HORIZON).as_secs_f64() / mean_call.as_secs_f64();
    let room = concurrency as f64 * per_slot;
    if room >= MAX_PREFETCH as f64 { MAX_PREFETCH } else { room as usize }
}

#[cfg(test)]
mod tests {
    //! The prefetch sizing rule.

    use super::*;

    #[test]
    fn failed_claims_back_off_from_the_poll_interval_to_the_cap() {
        let poll = Duration::from_millis(500);
        for _ in 0..50 {
            let first = claim_backoff(poll, 1);
            assert!(first >= poll / 2 && first < poll, "{first:?}");
            let third = claim_backoff(poll, 3);
            assert!(third >= poll * 2 && third < poll * 4, "{third:?}");
            let late = claim_backoff(poll, 40);
            assert!(late >= CLAIM_BACKOFF_CAP / 2 && late < CLAIM_BACKOFF_CAP, "{late:?}");
        }
        let slow = Duration::from_secs(60);
        assert!(claim_backoff(slow, 9) >= slow / 2, "a poll beyond the cap is never shortened");
        assert!(claim_backoff(Duration::from_micros(10), 1) <= Duration::from_millis(1));
    }

    #[test]
    fn fast_handlers_get_a_deep_buffer_and_slow_ones_none() {
        let claim = Duration::from_millis(4);
        assert_eq!(prefetch_room(8, claim, Duration::ZERO), 0, "no call has ended yet");
        assert_eq!(prefetch_room(8, claim, Duration::from_micros(5)), MAX_PREFETCH);
        assert_eq!(prefetch_room(8, Duration::from_millis(20), Duration::from_millis(4)), 80, "two claims");
        assert_eq!(prefetch_room(8, claim, Duration::from_secs(1)), 0);
    }

    #[test]
    fn handlers_of_a_few_milliseconds_buffer_the_horizon_and_no_more() {
        let claim = Duration::from_micros(300);
        assert_eq!(prefetch_room(4, claim, Duration::from_millis(2)), 50, "25 ms of 2 ms calls on 4 slots");
        assert_eq!(prefetch_room(4, claim, Duration::from_millis(50)), 2);
        assert_eq!(prefetch_room(4, claim, Duration::from_millis(101)), 0, "slower than the horizon per slot");
    }
}
