//! [`WorkerSession`]: the one door for lease holders. The application API
//! ([`CairnQ`]) submits, reads and manages tasks; whoever claims and
//! settles them (the worker crate, or a program running its own loop)
//! does it through a session built once from a client, a worker id and a
//! lease that were checked then, so the claim loop does not re-check them
//! every round, and the store behind the client stays private to it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::CairnQ;
use crate::clock::require_span_ms;
use crate::error::{Error, Result, require_non_empty, require_positive, require_text};
use crate::json::Json;
use crate::model::{HeldLease, Task, TaskRef};
use crate::observe::Outage;
use crate::store::{
    ClaimDraw, ClaimParams, CompleteBatchParams, FailParams, HeartbeatBatchParams, HeartbeatParams, LimitWaitParams,
    Notifications, ProbeParams, ProgressParams, RepairParams, Repaired, SettleParams, Store,
};

/// A lease holder on one client: claims due tasks under one worker id and
/// lease length, renews and settles what it claimed, and watches for work.
/// Built by [`CairnQ::worker_session`]; cheap to clone.
///
/// Every write about a task is checked against the row's owner and lease
/// by the store, so a session whose lease ran out gets
/// [`Error::LostLease`], never a second owner's row.
///
/// ```
/// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// use std::time::Duration;
/// use cairnq_core::store::ClaimDraw;
///
/// let session = client.worker_session("worker-1", Duration::from_secs(30))?;
/// for task in session.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(10)], vec![]).await? {
///     // ... run it, renewing with session.heartbeat(&task.id) while it runs ...
///     session.complete(&task.id, serde_json::json!({"ok": true})).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct WorkerSession {
    client: CairnQ,
    worker_id: Arc<str>,
    lease_ms: i64,
}

impl std::fmt::Debug for WorkerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerSession").field("worker_id", &self.worker_id).field("lease_ms", &self.lease_ms).finish()
    }
}

impl CairnQ {
    /// A lease holder on this client under `worker_id`, whose claims and
    /// renewals hold a task for `lease`. Refuses an empty worker id, one a
    /// backend could not hold, and a lease under a millisecond or past
    /// [`MAX_DELAY`](crate::MAX_DELAY).
    ///
    /// ```
    /// # fn demo(client: &cairnq_core::CairnQ) {
    /// use std::time::Duration;
    /// assert!(client.worker_session("", Duration::from_secs(30)).is_err());
    /// assert!(client.worker_session("w1", Duration::ZERO).is_err());
    /// # }
    /// ```
    pub fn worker_session(&self, worker_id: impl Into<String>, lease: Duration) -> Result<WorkerSession> {
        let worker_id = worker_id.into();
        require_non_empty("worker_id", &worker_id)?;
        require_text("worker_id", &worker_id)?;
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        require_positive("lease", lease_ms)?;
        require_span_ms("lease", lease_ms)?;
        Ok(WorkerSession { client: self.clone(), worker_id: worker_id.into(), lease_ms })
    }
}

impl WorkerSession {
    /// The client this session holds leases on.
    pub fn client(&self) -> &CairnQ {
        &self.client
    }

    /// The worker id every lease of this session is held under.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// Whether `store` is the very store object this session holds leases
    /// in (the one its client was built on), which a backend's own settle
    /// checks before it writes.
    pub fn is_on(&self, store: &dyn Store) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.client.store), store as *const dyn Store)
    }

    /// The backend this session's leases live in (`Store::backend`).
    pub fn backend(&self) -> &'static str {
        self.client.store.backend()
    }

    /// How long a claim or a renewal holds a task.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.lease_ms).unwrap_or(0))
    }

    /// Read-only: is anything due for the probe's queues and names, or has
    /// any lease there expired? (Cheaper than a claim: a loop probes while
    /// idle and claims when this says yes.)
    pub async fn probe(&self, params: &ProbeParams) -> Result<bool> {
        params.queues.iter().try_for_each(|queue| require_text("queues", queue))?;
        self.client.store.claimable(params).await
    }

    /// Claims due tasks from `draws` in one transaction (expired leases
    /// are recovered first); `budgets` caps what the draws take together
    /// (see [`ClaimParams::budgets`]; empty for none). Each claimed task is
    /// running under this session's worker id and lease.
    pub async fn claim(&self, draws: Vec<ClaimDraw>, budgets: Vec<u32>) -> Result<Vec<Task>> {
        for draw in &draws {
            draw.queues.iter().try_for_each(|queue| require_text("queues", queue))?;
            draw.names.iter().flatten().try_for_each(|name| require_text("names", name))?;
        }
        let mut params = ClaimParams::new(self.worker_id.as_ref(), self.lease_ms).budgets(budgets);
        params.draws = draws;
        self.client.store.claim(&params).await
    }

    /// The store's push notifications: a watch that fires on the next
    /// change a [`Wake`](crate::Wake) describes (new work in some queues, a
    /// task ending), and the moment push wakeups stop for good, so a loop
    /// polls and says so.
    pub fn notifications(&self) -> Notifications {
        self.client.store.notifications()
    }

    /// The store's outage state in this process: one "unreachable" and one
    /// "reconnected" line per outage, however many parts of it see errors.
    pub fn outage(&self) -> Arc<Outage> {
        Outage::of(&self.client.store)
    }

    /// How long until a rate limit next lets a start of a key it held
    /// back when the claim that found nothing began (`claim_began`) through,
    /// so a loop whose claim found only throttled work sleeps until then
    /// rather than a whole poll. Zero when such a rate has opened since
    /// (claim again now); `None` when no rate held a key back.
    pub async fn next_rate_admit(&self, claim_began: Instant) -> Result<Option<Duration>> {
        let wait = self.client.store.limit_wait(&LimitWaitParams::new().since(claim_began)).await?;
        Ok(wait.map(|ms| Duration::from_millis(ms.max(0).unsigned_abs())))
    }

    /// Repairs rows of the params' queues that no ordinary operation would
    /// leave (a foreign or broken writer's), so lease recovery and claims
    /// can take them: see [`Store::repair`](crate::Store::repair).
    pub async fn repair(&self, params: &RepairParams) -> Result<Repaired> {
        params.queues.iter().try_for_each(|queue| require_text("queues", queue))?;
        self.client.store.repair(params).await
    }

    /// Renews the lease on one task this session holds.
    pub async fn heartbeat(&self, task_id: &str) -> Result<Task> {
        require_owner(task_id, &self.worker_id)?;
        self.client
            .store
            .heartbeat(&HeartbeatParams::new(task_id, self.worker_id.as_ref()).lease_ms(self.lease_ms))
            .await
    }

    /// Renews many leases in one write; returns those still held, in the
    /// order asked.
    pub async fn heartbeat_batch(&self, task_ids: Vec<String>) -> Result<Vec<HeldLease>> {
        task_ids.iter().try_for_each(|id| require_text("task_ids", id))?;
        if task_ids.is_empty() {
            return Ok(Vec::new());
        }
        let params = HeartbeatBatchParams::new(self.worker_id.as_ref(), task_ids).lease_ms(self.lease_ms);
        self.client.store.heartbeat_batch(&params).await
    }

    /// Records progress (a fraction in 0..=1) and/or a message on a task
    /// this session holds; `None` keeps the old value. The row returned
    /// carries the task's cancel flag.
    pub async fn progress(&self, task_id: &str, fraction: Option<f64>, message: Option<&str>) -> Result<Task> {
        if let Some(p) = fraction
            && !(0.0..=1.0).contains(&p)
        {
            return Err(Error::validation("progress", format!("{p} is outside 0..1")));
        }
        require_owner(task_id, &self.worker_id)?;
        let mut params = ProgressParams::new(task_id, self.worker_id.as_ref());
        params.progress = fraction;
        if let Some(message) = message {
            require_text("message", message)?;
            params.message = Some(message.to_string());
        }
        self.client.store.progress(&params).await
    }

    /// Running -> succeeded with `result`, even when a cancel is pending
    /// (the raw primitive; [`complete`](Self::complete) lets a cancel win).
    pub async fn succeed(&self, task_id: &str, result: impl Into<Json>) -> Result<Task> {
        require_owner(task_id, &self.worker_id)?;
        self.client.store.succeed(&SettleParams::new(task_id, self.worker_id.as_ref()).result(result)).await
    }

    /// Running -> succeeded with `result`, or canceled when a cancel is
    /// pending.
    pub async fn complete(&self, task_id: &str, result: impl Into<Json>) -> Result<Task> {
        require_owner(task_id, &self.worker_id)?;
        self.client.store.complete(&SettleParams::new(task_id, self.worker_id.as_ref()).result(result)).await
    }

    /// Completes many tasks in one write (see
    /// [`Store::complete_batch`](crate::Store::complete_batch)): the tasks
    /// settled, in the order asked. A task listed twice is refused.
    pub async fn complete_batch(&self, completions: Vec<(String, Json)>) -> Result<Vec<TaskRef>> {
        let mut seen = std::collections::HashSet::with_capacity(completions.len());
        if let Some((twice, _)) = completions.iter().find(|(id, _)| !seen.insert(id.as_str())) {
            return Err(Error::validation("completions", format!("task {twice} is listed twice")));
        }
        completions.iter().try_for_each(|(id, _)| require_text("completions", id))?;
        if completions.is_empty() {
            return Ok(Vec::new());
        }
        self.client.store.complete_batch(&CompleteBatchParams::new(self.worker_id.as_ref(), completions)).await
    }

    /// Fails an attempt with `error` (an error envelope object). With
    /// `retry_after`, the task is queued again after that delay while it
    /// has attempts left; without, it ends failed. A pending cancel wins
    /// either way (the row ends canceled).
    pub async fn fail(&self, task_id: &str, error: impl Into<Json>, retry_after: Option<Duration>) -> Result<Task> {
        require_owner(task_id, &self.worker_id)?;
        let error = error.into();
        if !error.is_object() {
            return Err(Error::validation("error", "must be an error envelope object"));
        }
        let mut params = FailParams::new(task_id, self.worker_id.as_ref()).error(error);
        if let Some(delay) = retry_after {
            let delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
            require_span_ms("retry_after", delay_ms)?;
            params = params.retryable(true).delay_ms(delay_ms);
        }
        self.client.store.fail(&params).await
    }
}

/// The task and worker of an ownership-checked write, as text every
/// backend can hold.
pub(super) fn require_owner(task_id: &str, worker_id: &str) -> Result<()> {
    require_text("task_id", task_id)?;
    require_text("worker_id", worker_id)
}
