//! Worker and per-name options, with PROTOCOL.md's defaults, and the
//! [`WorkerIssue`]s a worker reports.
//!
//! Options are plain builders checked once in [`WorkerOptions::validate`]
//! when the worker is made, so a bad value fails before anything runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Backoff, Backpressure, Error, Result};

/// Something the worker loop ran into, reported through
/// [`WorkerOptions::on_error`]. Every issue but an [`Unusable`] database
/// under [`OnUnusable::Stop`] is survived: the loop carries on.
///
/// [`Unusable`]: WorkerIssue::Unusable
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkerIssue {
    /// A store call of the loop failed (probe, claim, heartbeat, settle)
    /// with an error that may heal; failed claims are retried with a
    /// capped exponential backoff.
    Store {
        /// What the loop was doing.
        during: &'static str,
        /// The error.
        error: Error,
    },
    /// A store call failed with an error waiting will not heal (see
    /// [`Error::is_unusable`]): a read-only or corrupted database, a missing
    /// privilege, another protocol. Reported once per outage; then the
    /// worker stops (`stopping`, the default) or keeps retrying with the
    /// backoff, as [`WorkerOptions::on_unusable`] says.
    Unusable {
        /// What the loop was doing.
        during: &'static str,
        /// The error, its message starting with the cause.
        error: Error,
        /// Whether the worker stops because of it.
        stopping: bool,
    },
    /// A heartbeat tick came this much later than scheduled: something is
    /// blocking the async runtime (a synchronous handler registered with
    /// `task` instead of `task_blocking`?), and leases are at risk.
    BlockedRuntime {
        /// How late the tick was.
        late_by: Duration,
    },
    /// The worker lost the leases of these tasks: it did not renew them in
    /// time (a suspended process, a blocked runtime, a store too slow to
    /// answer), so another worker may run them now and whatever this worker
    /// still does with them is discarded. Each task is reported once.
    LostLeases {
        /// The tasks whose lease was lost.
        task_ids: Vec<String>,
    },
    /// A store call took this long, more than a third of the lease: leases
    /// are at risk even though the runtime itself is not blocked.
    SlowStore {
        /// What the loop was doing.
        during: &'static str,
        /// How long the call took.
        took: Duration,
    },
    /// The periodic repair (see [`WorkerOptions::repair_every`]) moved rows
    /// no ordinary operation would have: running rows without a lease (now
    /// recovered like an expired lease) and queued rows without a due time
    /// (now due). Some writer left them so.
    Repaired {
        /// What was repaired.
        repaired: cairnq_core::Repaired,
    },
    /// Handlers still running when the drain timeout passed were abandoned;
    /// their leases will expire and another worker will retry them.
    Abandoned {
        /// How many handler calls were abandoned.
        calls: usize,
    },
}

impl fmt::Display for WorkerIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Store { during, error } => write!(f, "{during} failed: {error}"),
            Self::Unusable { during, error, stopping: true } => {
                write!(f, "{during} failed and waiting will not help, so the worker stops: {error}")
            }
            Self::Unusable { during, error, stopping: false } => write!(
                f,
                "{during} failed and waiting will not help; retrying with backoff as configured \
                 (reported once until a store call succeeds): {error}"
            ),
            Self::BlockedRuntime { late_by } => write!(
                f,
                "a heartbeat tick ran {} ms late: the async runtime was blocked or the process was suspended",
                late_by.as_millis()
            ),
            Self::LostLeases { task_ids } => write!(
                f,
                "lost the lease of {} task(s), which another worker may run now; their outcomes here are discarded: {}",
                task_ids.len(),
                task_ids.join(", ")
            ),
            Self::SlowStore { during, took } => {
                write!(f, "{during} took {} ms, more than a third of the lease: leases are at risk", took.as_millis())
            }
            Self::Repaired { repaired } => write!(
                f,
                "repaired rows no operation would move: gave running rows without a lease an expired one ({}), \
                 made queued rows without a due time due now ({})",
                repaired.expired.join(", "),
                repaired.scheduled.join(", ")
            ),
            Self::Abandoned { calls } => write!(f, "abandoned {calls} handler call(s) at the drain timeout"),
        }
    }
}

/// What a worker does when the database cannot be used as it is (a
/// read-only or corrupted file, a missing privilege, a database of another
/// protocol: see [`Error::is_unusable`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnUnusable {
    /// Report it once ([`WorkerIssue::Unusable`]) and stop as
    /// [`Worker::stop`](crate::Worker::stop) does — claim nothing more, let
    /// running handlers finish within the drain timeout (buffered, not yet
    /// started tasks are dropped: their results could not be written) —
    /// then [`Worker::run`](crate::Worker::run) returns the error. The
    /// default: a worker that cannot work should say so and exit, so a
    /// supervisor or an operator sees it.
    #[default]
    Stop,
    /// Report it once per outage and keep retrying claims with the backoff
    /// (poll interval doubling up to 30 s), for deployments where someone
    /// may fix the database under a running worker.
    KeepRetrying,
}

/// The hook that receives [`WorkerIssue`]s.
pub type OnError = Arc<dyn Fn(WorkerIssue) + Send + Sync>;

/// Options of one worker. `Default` gives PROTOCOL.md's defaults: queue
/// `default`, concurrency 1, lease 30 s, heartbeat every max(50 ms, lease/3),
/// poll 500 ms, backoff 1 s .. 30 s.
///
/// ```
/// use std::time::Duration;
/// use cairnq_worker::WorkerOptions;
/// let options = WorkerOptions::new()
///     .queues(["emails", "default"])
///     .concurrency(8)
///     .lease(Duration::from_secs(10))
///     .resource("gpu", 1);
/// assert_eq!(options.heartbeat_interval(), Duration::from_secs(10) / 3);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct WorkerOptions {
    /// Queues served (non-empty).
    pub queues: Vec<String>,
    /// Concurrent handler calls (a batch call counts once); >= 1.
    pub concurrency: usize,
    /// Lease length; renewed by the heartbeat loop.
    pub lease: Duration,
    /// Heartbeat period; `None`: max(50 ms, lease / 3).
    pub heartbeat: Option<Duration>,
    /// Idle poll period (a push wakeup may cut it short).
    pub poll_interval: Duration,
    /// Delay schedule of retryable failures.
    pub backoff: Backoff,
    /// An attempt running longer is abandoned and failed as `handler_timeout`.
    pub max_run: Option<Duration>,
    /// Named capacities handlers can join (`{"gpu": 1}`).
    pub resources: BTreeMap<String, u32>,
    /// Stop claiming while the payload bytes of running handlers reach this.
    pub max_in_flight_bytes: Option<u64>,
    /// At most this many rows per claim transaction.
    pub claim_batch: Option<u32>,
    /// Throttles submits made from handlers (children), see [`Backpressure`].
    pub backpressure: Option<Backpressure>,
    /// How long a stop waits for running handlers before abandoning them.
    pub drain_timeout: Duration,
    /// Claim every name on the queues and fail the unknown ones as
    /// `no_handler`; off by default (a worker claims only its own names).
    pub claim_unknown_names: bool,
    /// The worker id; `None`: `worker_` + a fresh ULID.
    pub worker_id: Option<String>,
    /// Receives what the loop reports; `None`: written to stderr.
    pub on_error: Option<OnError>,
    /// What to do when the database turns out unusable (stop, by default).
    pub on_unusable: OnUnusable,
    /// How often the worker repairs rows of its queues that no operation
    /// would move ([`Store::repair`](cairnq_core::Store::repair)), starting
    /// at once; `None`: never. Default 60 s.
    pub repair_every: Option<Duration>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            queues: vec!["default".to_string()],
            concurrency: 1,
            lease: Duration::from_secs(30),
            heartbeat: None,
            poll_interval: Duration::from_millis(500),
            backoff: Backoff::default(),
            max_run: None,
            resources: BTreeMap::new(),
            max_in_flight_bytes: None,
            claim_batch: None,
            backpressure: None,
            drain_timeout: Duration::from_secs(30),
            claim_unknown_names: false,
            worker_id: None,
            on_error: None,
            on_unusable: OnUnusable::Stop,
            repair_every: Some(Duration::from_secs(60)),
        }
    }
}

impl fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("queues", &self.queues)
            .field("concurrency", &self.concurrency)
            .field("lease", &self.lease)
            .field("heartbeat", &self.heartbeat_interval())
            .field("poll_interval", &self.poll_interval)
            .field("max_run", &self.max_run)
            .field("resources", &self.resources)
            .field("max_in_flight_bytes", &self.max_in_flight_bytes)
            .field("worker_id", &self.worker_id)
            .field("on_unusable", &self.on_unusable)
            .finish_non_exhaustive()
    }
}

impl WorkerOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves these queues.
    pub fn queues<I: IntoIterator<Item = S>, S: Into<String>>(mut self, queues: I) -> Self {
        self.queues = queues.into_iter().map(Into::into).collect();
        self
    }

    /// Runs up to `n` handler calls at once.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Claims with this lease length.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Renews leases this often.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = Some(every);
        self
    }

    /// Polls this often when idle.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// Retry backoff base and cap (a zero base retries at once).
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.backoff = Backoff::new(base, cap);
        self
    }

    /// Abandons an attempt after `limit` and fails it as `handler_timeout`.
    pub fn max_run(mut self, limit: Duration) -> Self {
        self.max_run = Some(limit);
        self
    }

    /// Declares a resource with `capacity` concurrent tasks.
    pub fn resource(mut self, name: impl Into<String>, capacity: u32) -> Self {
        self.resources.insert(name.into(), capacity);
        self
    }

    /// Stops claiming while running handlers hold this many payload bytes.
    pub fn max_in_flight_bytes(mut self, bytes: u64) -> Self {
        self.max_in_flight_bytes = Some(bytes);
        self
    }

    /// Takes at most `rows` per claim transaction.
    pub fn claim_batch(mut self, rows: u32) -> Self {
        self.claim_batch = Some(rows);
        self
    }

    /// Throttles child submits made from handlers.
    pub fn backpressure(mut self, settings: Backpressure) -> Self {
        self.backpressure = Some(settings);
        self
    }

    /// Waits this long for running handlers when stopping.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Claims unknown names too and fails them as `no_handler`.
    pub fn claim_unknown_names(mut self, on: bool) -> Self {
        self.claim_unknown_names = on;
        self
    }

    /// Names the worker.
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// Stops (the default) or keeps retrying when the database is unusable.
    ///
    /// ```
    /// use cairnq_worker::{OnUnusable, WorkerOptions};
    /// let options = WorkerOptions::new().on_unusable(OnUnusable::KeepRetrying);
    /// assert_eq!(options.on_unusable, OnUnusable::KeepRetrying);
    /// ```
    pub fn on_unusable(mut self, policy: OnUnusable) -> Self {
        self.on_unusable = policy;
        self
    }

    /// Sends what the loop reports to `hook` instead of stderr.
    pub fn on_error(mut self, hook: impl Fn(WorkerIssue) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(hook));
        self
    }

    /// Repairs rows no operation would move this often (`None`: never).
    pub fn repair_every(mut self, every: Option<Duration>) -> Self {
        self.repair_every = every;
        self
    }

    /// The heartbeat period in effect.
    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat.unwrap_or_else(|| (self.lease / 3).max(Duration::from_millis(50)))
    }

    /// The lease in whole milliseconds.
    pub(crate) fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// Refuses values the loop cannot run with.
    pub fn validate(&self) -> Result<()> {
        if self.queues.is_empty() || self.queues.iter().any(|q| q.is_empty() || q.contains('\0')) {
            return Err(Error::validation("queues", "at least one queue, and no empty names or NUL characters"));
        }
        if self.worker_id.as_ref().is_some_and(|id| id.is_empty() || id.contains('\0')) {
            return Err(Error::validation("worker_id", "must not be empty or hold a NUL character"));
        }
        if self.concurrency == 0 {
            return Err(Error::validation("concurrency", "must be at least 1"));
        }
        if self.lease < Duration::from_millis(1) {
            return Err(Error::validation("lease", "must be at least 1 ms"));
        }
        if self.repair_every.is_some_and(|every| every.is_zero()) {
            return Err(Error::validation("repair_every", "must be above zero (or None for never)"));
        }
        if self.heartbeat_interval().is_zero() || self.poll_interval.is_zero() {
            return Err(Error::validation("heartbeat", "heartbeat and poll intervals must be above zero"));
        }
        if self.heartbeat_interval() >= self.lease {
            return Err(Error::validation("heartbeat", "must be shorter than the lease, or every lease expires"));
        }
        if self.claim_batch == Some(0) || self.max_in_flight_bytes == Some(0) {
            return Err(Error::validation("claim_batch", "claim_batch and max_in_flight_bytes must be above zero"));
        }
        Ok(())
    }
}

/// Options of one handler name.
///
/// ```
/// use cairnq_worker::TaskOptions;
/// let gpu = TaskOptions::new().resource("gpu").concurrency(2);
/// let embed = TaskOptions::new().batch(64);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Up to this many tasks per call (batch handlers only).
    pub batch: Option<usize>,
    /// At most this many calls of this name at once.
    pub concurrency: Option<usize>,
    /// The declared resource each task of this name holds while it runs.
    pub resource: Option<String>,
}

impl TaskOptions {
    /// No per-name options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers up to `n` tasks per call.
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = Some(n);
        self
    }

    /// Caps this name's concurrent calls.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// Joins a resource declared on the worker.
    pub fn resource(mut self, name: impl Into<String>) -> Self {
        self.resource = Some(name.into());
        self
    }

    /// Whether this name needs a draw of its own in the claim transaction.
    pub(crate) fn has_own_draw(&self) -> bool {
        self.batch.is_some() || self.concurrency.is_some() || self.resource.is_some()
    }

    pub(crate) fn validate(&self, options: &WorkerOptions) -> Result<()> {
        if self.batch == Some(0) || self.concurrency == Some(0) {
            return Err(Error::validation("batch", "batch and concurrency must be at least 1"));
        }
        match &self.resource {
            Some(r) if !options.resources.contains_key(r) => {
                Err(Error::validation("resource", format!("{r:?} is not declared on the worker")))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Option validation.

    use super::*;

    #[test]
    fn out_of_range_options_are_refused_by_field() {
        let field = |options: WorkerOptions| match options.validate() {
            Err(Error::Validation { field, .. }) => Some(field),
            _ => None,
        };
        assert_eq!(field(WorkerOptions::new()), None);
        assert_eq!(field(WorkerOptions::new().queues(Vec::<String>::new())), Some("queues"));
        assert_eq!(field(WorkerOptions::new().concurrency(0)), Some("concurrency"));
        assert_eq!(field(WorkerOptions::new().heartbeat(Duration::from_secs(30))), Some("heartbeat"));
        assert_eq!(field(WorkerOptions::new().claim_batch(0)), Some("claim_batch"));
        assert_eq!(field(WorkerOptions::new().queues(["a\0b"])), Some("queues"));
        assert_eq!(field(WorkerOptions::new().worker_id("w\0")), Some("worker_id"));
    }

    #[test]
    fn the_default_heartbeat_is_a_third_of_the_lease_but_at_least_50_ms() {
        assert_eq!(WorkerOptions::new().heartbeat_interval(), Duration::from_secs(10));
        assert_eq!(
            WorkerOptions::new().lease(Duration::from_millis(90)).heartbeat_interval(),
            Duration::from_millis(50)
        );
    }
}
