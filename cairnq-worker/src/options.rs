//! Worker and per-name options, with PROTOCOL.md's defaults.
//!
//! Options are plain builders checked once in [`WorkerOptions::validate`]
//! when the worker is made, so a bad value fails before anything runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Backoff, Backpressure, Error, MAX_DELAY, Result, Schedule};

use crate::issue::{OnError, WorkerIssue};

/// The longest [`WorkerOptions::completion_linger`]: a linger is a few
/// milliseconds; seconds of it would only hold results back.
const MAX_COMPLETION_LINGER: Duration = Duration::from_secs(1);

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
    /// Receives what the loop reports; `None`: logged through `tracing`.
    pub on_error: Option<OnError>,
    /// What to do when the database turns out unusable (stop, by default).
    pub on_unusable: OnUnusable,
    /// How often the worker repairs rows of its queues that no operation
    /// would move ([`Store::repair`](cairnq_core::Store::repair)), starting
    /// at once; `None`: never. Default 60 s.
    pub repair_every: Option<Duration>,
    /// How often the worker fires due schedules (the book's "Schedules" chapter),
    /// starting at once; `None`: this worker fires none. Default 1 s.
    pub schedules_every: Option<Duration>,
    /// Schedules declared in code: upserted at start (owner `code`).
    pub schedules: Vec<Schedule>,
    /// Reads the queue gauges (`cairnq_queue_depth`) this often while the
    /// worker runs, at most once per interval per process
    /// ([`QueueGauges`](cairnq_core::QueueGauges)); `None` (the
    /// default): never, so a worker whose application exports no metrics
    /// does not count rows for nobody.
    pub queue_gauges: Option<Duration>,
    /// How long a completion may wait for others to share its write while
    /// other handler calls still run; zero (the default): written at once.
    pub completion_linger: Duration,
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
            schedules_every: Some(Duration::from_secs(1)),
            schedules: Vec::new(),
            queue_gauges: None,
            completion_linger: Duration::ZERO,
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
            .field("completion_linger", &self.completion_linger)
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

    /// Retry backoff base and cap (a zero base retries at once; a delay past
    /// [`MAX_DELAY`] waits [`MAX_DELAY`]).
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

    /// Lets a completion wait up to `linger` for others to share its write,
    /// while other handler calls still run (a lone call's completion is
    /// written at once). For workers whose calls end every fraction of a
    /// millisecond, as `cairnq worker --exec` does: fewer, larger commits,
    /// for results up to `linger` later. At most 1 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cairnq_worker::WorkerOptions;
    /// let options = WorkerOptions::new().concurrency(4).completion_linger(Duration::from_millis(2));
    /// assert!(options.validate().is_ok());
    /// assert!(WorkerOptions::new().completion_linger(Duration::from_secs(2)).validate().is_err());
    /// ```
    pub fn completion_linger(mut self, linger: Duration) -> Self {
        self.completion_linger = linger;
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

    /// Sends what the loop reports to `hook` instead of the `tracing` log.
    pub fn on_error(mut self, hook: impl Fn(WorkerIssue) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(hook));
        self
    }

    /// Repairs rows no operation would move this often (`None`: never).
    pub fn repair_every(mut self, every: Option<Duration>) -> Self {
        self.repair_every = every;
        self
    }

    /// Fires due schedules this often (`None`: this worker fires none; the
    /// default is every second).
    pub fn schedules_every(mut self, every: Option<Duration>) -> Self {
        self.schedules_every = every;
        self
    }

    /// Declares a schedule in code: upserted when the worker starts (a
    /// changed spec or zone moves its next fire, an unchanged one keeps it).
    ///
    /// ```
    /// use cairnq_core::Schedule;
    /// use cairnq_worker::WorkerOptions;
    /// let options = WorkerOptions::new().schedule(Schedule::cron("nightly", "0 3 * * *", "report")?);
    /// assert_eq!(options.schedules.len(), 1);
    /// # Ok::<(), cairnq_core::Error>(())
    /// ```
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedules.push(schedule);
        self
    }

    /// Reads the queue gauges every `interval` while running (`None`:
    /// never; see [`DEFAULT_GAUGE_INTERVAL`](cairnq_core::DEFAULT_GAUGE_INTERVAL)).
    ///
    /// ```
    /// use cairnq_core::DEFAULT_GAUGE_INTERVAL;
    /// let options = cairnq_worker::WorkerOptions::new().queue_gauges(Some(DEFAULT_GAUGE_INTERVAL));
    /// assert_eq!(options.queue_gauges, Some(DEFAULT_GAUGE_INTERVAL));
    /// ```
    pub fn queue_gauges(mut self, interval: Option<Duration>) -> Self {
        self.queue_gauges = interval;
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
        if self.lease < Duration::from_millis(1) || self.lease > MAX_DELAY {
            return Err(Error::validation("lease", "must be at least 1ms and at most about 292 million years"));
        }
        if self.schedules_every.is_some_and(|every| every.is_zero()) {
            return Err(Error::validation("schedules_every", "must be above zero (or None for never)"));
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
        if self.completion_linger > MAX_COMPLETION_LINGER {
            return Err(Error::validation("completion_linger", "must be at most 1s"));
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
