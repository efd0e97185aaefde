//! [`Worker`]: handler registration and the worker's lifecycle — `run` as a
//! future, `serve` as a blocking process entry point with SIGINT/SIGTERM
//! handled, `stop`, and a background [`WorkerHandle`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cairnq_core::QueueGauges;
use cairnq_core::{CairnQ, Error, Result, Store, WorkerSession};

use crate::claim_loop::{ClaimLoop, Handlers};
use crate::claim_plan::NameTable;
use crate::issue::{WorkerIssue, deliver};
use crate::options::WorkerOptions;
use crate::shared::Shared;
use crate::stop::{ShutdownSignals, StopLevel, StopSwitch, raise, stop_switch};

/// Runs handlers for the tasks it claims from a store.
///
/// ```no_run
/// # async fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
/// use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
///
/// let mut worker = Worker::from_store(store, WorkerOptions::new().concurrency(4))?;
/// worker.task("add", |_ctx: TaskContext, (a, b): (i64, i64)| async move { Ok::<_, TaskError>(a + b) })?;
/// worker.blocking_task("hash", |_ctx: TaskContext, text: String| Ok::<_, TaskError>(text.len()))?;
/// let handle = worker.spawn();
/// // ... later
/// handle.stop_and_join().await?;
/// # Ok(()) }
/// ```
pub struct Worker {
    client: CairnQ,
    /// The lease holder every run of this worker claims and settles through
    /// (on the client with the options' backpressure, when set).
    session: WorkerSession,
    pub(crate) options: WorkerOptions,
    pub(crate) handlers: Handlers,
    stop: StopSwitch,
    running: AtomicBool,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.handlers.by_name.keys().collect();
        names.sort();
        f.debug_struct("Worker")
            .field("options", &self.options)
            .field("handlers", &names)
            .field("fallback", &self.handlers.fallback.is_some())
            .finish()
    }
}

impl Worker {
    /// A worker over `client`'s store. Fails with a validation error when an
    /// option is out of range.
    pub fn new(client: CairnQ, mut options: WorkerOptions) -> Result<Self> {
        options.validate()?;
        let worker_id = options.worker_id.get_or_insert_with(cairnq_core::backend::new_worker_id).clone();
        let gated = match &options.backpressure {
            Some(settings) => client.clone().with_backpressure(settings.clone()),
            None => client.clone(),
        };
        let session = gated.worker_session(worker_id, options.lease)?;
        let stop = stop_switch();
        Ok(Self { client, session, options, handlers: Handlers::default(), stop, running: AtomicBool::new(false) })
    }

    /// A worker over `store`.
    pub fn from_store(store: impl Store, options: WorkerOptions) -> Result<Self> {
        Self::new(CairnQ::new(store), options)
    }

    /// This worker's id.
    pub fn worker_id(&self) -> &str {
        self.options.worker_id.as_deref().unwrap_or_default()
    }

    /// The client the worker uses (submit from it to feed the worker).
    pub fn client(&self) -> &CairnQ {
        &self.client
    }

    /// Runs the worker until [`stop`](Self::stop) (or a [`StopHandle`]),
    /// then drains. Fails at once when no handler is registered or the worker
    /// is already running. A stopped worker stays stopped: a later `run`
    /// drains and returns at once.
    ///
    /// When the database turns out unusable — read-only, corrupted, a
    /// missing privilege, another protocol ([`Error::is_unusable`]) — the
    /// worker reports it once ([`WorkerIssue::Unusable`](crate::WorkerIssue::Unusable)),
    /// stops and drains as if stopped, and `run` returns that error; with
    /// [`OnUnusable::KeepRetrying`](crate::OnUnusable::KeepRetrying) it keeps
    /// backing off instead.
    ///
    /// The first run in a process installs the panic hook that keeps
    /// caught handler panics quiet (their envelopes record them) and passes
    /// every other panic to the hook installed before it. A hook the
    /// application sets after that replaces it, and handler panics are
    /// printed again: set yours before starting workers.
    pub async fn run(&self) -> Result<()> {
        let names = self.name_table()?;
        crate::quiet_panics::install();
        if self.running.swap(true, Ordering::AcqRel) {
            return Err(Error::validation("worker", "this worker is already running"));
        }
        let core = Arc::new(Shared::new(self.session.clone(), self.options.clone(), self.stop.clone()));
        let _gauges =
            self.options.queue_gauges.map(|every| QueueGauges::new(self.client.clone()).interval(every).spawn());
        ClaimLoop::new(core.clone(), self.handlers.clone(), names, self.stop.subscribe()).run().await;
        self.running.store(false, Ordering::Release);
        match core.take_halt() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn name_table(&self) -> Result<NameTable> {
        let handlers = &self.handlers.by_name;
        if handlers.is_empty() && self.handlers.fallback.is_none() {
            return Err(Error::validation("handlers", "register at least one handler before running"));
        }
        let mut own: Vec<_> = handlers
            .iter()
            .filter(|(_, r)| r.options.has_own_draw())
            .map(|(n, r)| (n.clone(), r.options.clone()))
            .collect();
        own.sort_by(|a, b| a.0.cmp(&b.0));
        let mut shared: Vec<_> =
            handlers.iter().filter(|(_, r)| !r.options.has_own_draw()).map(|(n, _)| n.clone()).collect();
        shared.sort();
        if !self.options.claim_unknown_names && self.handlers.fallback.is_none() {
            return Ok(NameTable { own, shared: Some(shared) });
        }
        // A draw of any name would also take the own-draw names, past
        // their limits: claims cannot say "every name but these".
        if !own.is_empty() {
            let message = "claiming every name (claim_unknown_names or a fallback handler) cannot be combined \
                           with per-name batch, concurrency or resources";
            return Err(Error::validation("claim_unknown_names", message));
        }
        Ok(NameTable { own, shared: None })
    }

    /// Asks the running worker to stop claiming and drain.
    pub fn stop(&self) {
        raise(&self.stop, StopLevel::Draining);
    }

    /// Stops the worker at once: claims nothing more and abandons running
    /// handlers without waiting for the drain timeout (reported as
    /// [`WorkerIssue::Abandoned`]). Their tasks stay `running` until their
    /// leases expire; then another worker retries them. What a second
    /// SIGINT/SIGTERM does under [`serve`](Self::serve).
    pub fn stop_now(&self) {
        raise(&self.stop, StopLevel::AtOnce);
    }

    /// A handle that stops this worker from elsewhere.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle { stop: self.stop.clone() }
    }

    /// Runs until SIGINT or SIGTERM (Ctrl-C elsewhere), then drains
    /// (reporting [`WorkerIssue::Draining`]); a second signal during the
    /// drain stops at once, as [`stop_now`](Self::stop_now) does.
    pub async fn run_until_signal(&self) -> Result<()> {
        // Listening from the start and across both signals: a listener made
        // after the first would miss a second that came meanwhile.
        let mut signals = ShutdownSignals::listen();
        let run = self.run();
        tokio::pin!(run);
        tokio::select! {
            done = &mut run => return done,
            _ = signals.next() => self.stop(),
        }
        let draining = WorkerIssue::Draining { drain_timeout: self.options.drain_timeout };
        deliver(self.options.on_error.as_ref(), self.worker_id(), None, draining);
        tokio::select! {
            done = &mut run => return done,
            _ = signals.next() => self.stop_now(),
        }
        run.await
    }

    /// The blocking entry point of a worker process: builds a tokio runtime
    /// and runs until SIGINT or SIGTERM, then drains; a second signal stops
    /// at once (see [`run_until_signal`](Self::run_until_signal)). Do not call it from
    /// inside a runtime (use [`run_until_signal`](Self::run_until_signal)).
    ///
    /// ```no_run
    /// # fn demo(worker: cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// worker.serve()
    /// # }
    /// ```
    pub fn serve(self) -> Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::storage("cannot start the tokio runtime", e))?;
        let result = runtime.block_on(self.run_until_signal());
        // Blocking handlers abandoned at the drain timeout may still hold
        // threads; a runtime dropped normally would wait for them.
        runtime.shutdown_background();
        result
    }

    /// Runs the worker in the background; the handle stops it when asked
    /// or dropped. Must be called inside a tokio runtime.
    pub fn spawn(self) -> WorkerHandle {
        let stop = self.stop_handle();
        let task = tokio::spawn(async move { self.run().await });
        WorkerHandle { stop, task: Some(task) }
    }
}

/// Stops a worker from anywhere (cloneable).
#[derive(Debug, Clone)]
pub struct StopHandle {
    stop: StopSwitch,
}

impl StopHandle {
    /// Asks the worker to stop claiming and drain.
    pub fn stop(&self) {
        raise(&self.stop, StopLevel::Draining);
    }

    /// Stops the worker at once (see [`Worker::stop_now`]).
    pub fn stop_now(&self) {
        raise(&self.stop, StopLevel::AtOnce);
    }
}

/// A worker running in the background ([`Worker::spawn`]). Dropping the
/// handle stops the worker (it still drains in the background).
#[derive(Debug)]
pub struct WorkerHandle {
    stop: StopHandle,
    task: Option<tokio::task::JoinHandle<Result<()>>>,
}

impl WorkerHandle {
    /// Asks the worker to stop claiming and drain.
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// Waits for the worker to finish (after a stop).
    pub async fn join(mut self) -> Result<()> {
        let Some(task) = self.task.take() else { return Ok(()) };
        task.await.map_err(|e| Error::storage("the worker task ended abnormally", e))?
    }

    /// Stops the worker and waits for its drain to finish.
    pub async fn stop_and_join(self) -> Result<()> {
        self.stop();
        self.join().await
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.stop.stop();
    }
}
