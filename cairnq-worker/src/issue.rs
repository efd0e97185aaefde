//! What a running worker reports: the problems it survives (or stops for)
//! and the hook that receives them.
//!
//! A worker never prints: every report goes to
//! [`WorkerOptions::on_error`](crate::WorkerOptions::on_error) when set, and
//! otherwise becomes a `tracing` event (target `cairnq_worker`, with the
//! fields `worker_id`, `phase` and `error.kind` where they apply, and, for a
//! report about one attempt, `task_id`, `name`, `queue`, `attempt` and
//! `outcome` as every event about an attempt names them), which the
//! application's subscriber writes wherever it writes its logs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::observe::{OUTAGE_REMINDER, Outcome};
use cairnq_core::{Error, human_duration};

use crate::observe::Attempt;

/// Something the worker loop ran into, reported through
/// [`WorkerOptions::on_error`](crate::WorkerOptions::on_error). Every issue but an [`Unusable`] database
/// under [`OnUnusable::Stop`](crate::OnUnusable::Stop) is survived: the loop carries on.
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
        phase: Phase,
        /// The task the call was about, when it was about one (a settle);
        /// `None` for calls about many or none (a claim, a heartbeat).
        task_id: Option<String>,
        /// The error.
        error: Error,
    },
    /// A store call failed with an error waiting will not heal (see
    /// [`Error::is_unusable`]): a read-only or corrupted database, a missing
    /// privilege, another protocol. Reported once per outage; then the
    /// worker stops (`stopping`, the default) or keeps retrying with the
    /// backoff, as [`WorkerOptions::on_unusable`](crate::WorkerOptions::on_unusable) says.
    Unusable {
        /// What the loop was doing.
        phase: Phase,
        /// The task the call was about, when it was about one.
        task_id: Option<String>,
        /// The error, its message starting with the cause.
        error: Error,
        /// Whether the worker stops because of it.
        stopping: bool,
    },
    /// The database cannot be reached ([`Error::is_unreachable`]: a
    /// refused or dropped connection). Said once per outage for the whole
    /// process, however many calls fail (one outage state per store:
    /// [`Outage`](cairnq_core::observe::Outage)), then again every
    /// [`OUTAGE_REMINDER`](cairnq_core::observe::OUTAGE_REMINDER) while it
    /// lasts (`down_for` above zero). Every part keeps retrying as it would;
    /// [`WorkerIssue::Reconnected`] says when it ends.
    Unreachable {
        /// What the loop was doing when it noticed.
        phase: Phase,
        /// Where the database is, when the store says (`host:port`).
        endpoint: Option<String>,
        /// How long it has been unreachable (zero: it just became so).
        down_for: Duration,
        /// The error that said so.
        error: Error,
    },
    /// The database answers again after an outage
    /// ([`WorkerIssue::Unreachable`]) of this long. Said once.
    Reconnected {
        /// Where the database is, when the store says.
        endpoint: Option<String>,
        /// From the first failed call to the first answered one.
        after: Duration,
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
    /// still does with them is discarded. Each task is reported once, in a
    /// report of its own (so its event names it).
    LostLeases {
        /// The task whose lease was lost (one per report).
        task_ids: Vec<String>,
    },
    /// A store call took this long, more than a third of the lease: leases
    /// are at risk even though the runtime itself is not blocked.
    SlowStore {
        /// What the loop was doing.
        phase: Phase,
        /// How long the call took.
        took: Duration,
    },
    /// The periodic repair (see [`WorkerOptions::repair_every`](crate::WorkerOptions::repair_every)) moved rows
    /// no ordinary operation would have: running rows without a lease (now
    /// recovered like an expired lease) and queued rows without a due time
    /// (now due). Some writer left them so.
    Repaired {
        /// What was repaired.
        repaired: cairnq_core::Repaired,
    },
    /// Schedules owned by code (declared by some worker) that this worker
    /// does not declare: left in place, still firing, never deleted
    /// silently. Delete them with `CairnQ::delete_schedule` (or
    /// `cairnq schedule rm`) if they are gone for good. Reported at start.
    UndeclaredSchedules {
        /// Their names.
        names: Vec<String>,
    },
    /// A due schedule could not be fired (a spec or zone this build cannot
    /// read, a row a foreign writer broke); the others still fire.
    /// Reported once per schedule.
    ScheduleFailed {
        /// The schedule.
        schedule: String,
        /// Why.
        error: Error,
    },
    /// This worker fires no schedules: the database has no usable
    /// `cairnq_ext_schedules` table (opened as it is, before this SDK's
    /// extension migrations ran; `cairnq migrate` applies them). It keeps
    /// running tasks. Reported once.
    SchedulesOff {
        /// The store's words.
        error: Error,
    },
    /// The store's push wakeups stopped for good (see
    /// [`Notifications::lost`](cairnq_core::Notifications::lost)): the
    /// server refused LISTEN, or the connection for it, in a way no retry
    /// cures (a connection pooler in transaction mode, a role that may no
    /// longer log in, a standby). The worker keeps working and finds new
    /// tasks by polling every `poll_interval`. Reported once.
    WakeupsLost {
        /// Why, the server's words first.
        error: Error,
        /// How often the worker now looks for work.
        poll_interval: Duration,
    },
    /// The store polls by design (a Postgres store in pooler mode without
    /// a listen DSN: see
    /// [`Notifications::polls_only_reason`](cairnq_core::Notifications::polls_only_reason)),
    /// so the worker finds new tasks every `poll_interval`. A notice, not a
    /// fault (logged at INFO). Reported once, at the start.
    Polling {
        /// Why the store polls.
        reason: Error,
        /// How often the worker looks for work.
        poll_interval: Duration,
    },
    /// A signal (SIGINT or SIGTERM, under [`Worker::serve`](crate::Worker::serve)
    /// or [`Worker::run_until_signal`](crate::Worker::run_until_signal))
    /// asked the worker to stop: it claims nothing more and gives running
    /// handlers up to `drain_timeout`. A second signal stops it at once.
    Draining {
        /// How long running handlers get.
        drain_timeout: Duration,
    },
    /// Handlers still running were abandoned (and claimed tasks not yet
    /// started dropped): their tasks stay `running` until their leases
    /// expire, then another worker retries them.
    Abandoned {
        /// How many handler calls were abandoned.
        calls: usize,
        /// Why the worker did not wait for them.
        reason: AbandonReason,
    },
}

/// Why a stopping worker abandoned running handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbandonReason {
    /// The drain timeout passed.
    DrainTimeout,
    /// A second SIGINT/SIGTERM, or [`Worker::stop_now`](crate::Worker::stop_now).
    StoppedAtOnce,
}

impl fmt::Display for WorkerIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Store { phase, task_id, error } => write!(f, "{} failed: {error}", Call(*phase, task_id)),
            Self::Unusable { phase, task_id, error, stopping: true } => {
                write!(f, "{} failed and waiting will not help, so the worker stops: {error}", Call(*phase, task_id))
            }
            Self::Unusable { phase, task_id, error, stopping: false } => write!(
                f,
                "{} failed and waiting will not help; retrying with backoff as configured \
                 (reported once until a store call succeeds): {error}",
                Call(*phase, task_id)
            ),
            Self::Unreachable { endpoint, down_for, error, .. } if down_for.is_zero() => write!(
                f,
                "{} is unreachable; retrying, and saying so again every {} s while it lasts: {error}",
                Database(endpoint),
                OUTAGE_REMINDER.as_secs()
            ),
            Self::Unreachable { endpoint, down_for, error, .. } => {
                write!(f, "{} is still unreachable after {}: {error}", Database(endpoint), human_duration(*down_for))
            }
            Self::Reconnected { endpoint, after } => {
                write!(f, "{} answers again: reconnected after {:.1} s", Database(endpoint), after.as_secs_f64())
            }
            Self::BlockedRuntime { late_by } => write!(
                f,
                "a heartbeat tick ran {} late: the async runtime was blocked or the process was suspended",
                human_duration(*late_by)
            ),
            Self::LostLeases { task_ids } => write!(
                f,
                "lost the lease of {} task(s), which another worker may run now; their outcomes here are discarded: {}",
                task_ids.len(),
                task_ids.join(", ")
            ),
            Self::SlowStore { phase, took } => {
                write!(
                    f,
                    "the {phase} took {}, more than a third of the lease: leases are at risk",
                    human_duration(*took)
                )
            }
            Self::Repaired { repaired } => write!(
                f,
                "repaired rows no operation would move: gave running rows without a lease an expired one ({}), \
                 made queued rows without a due time due now ({})",
                repaired.expired.join(", "),
                repaired.scheduled.join(", ")
            ),
            Self::UndeclaredSchedules { names } => write!(
                f,
                "schedules declared in code elsewhere but not by this worker are left in place and keep firing \
                 (delete them if they are gone for good): {}",
                names.join(", ")
            ),
            Self::SchedulesOff { error } => write!(
                f,
                "this worker fires no schedules: the database has no usable schedules table \
                 (`cairnq migrate` applies this SDK's extension migrations): {error}"
            ),
            Self::ScheduleFailed { schedule, error } => write!(f, "schedule {schedule} cannot fire: {error}"),
            Self::WakeupsLost { error, poll_interval } => write!(
                f,
                "push wakeups stopped for good, so new tasks are found by polling every {}: {error}",
                human_duration(*poll_interval)
            ),
            Self::Polling { reason, poll_interval } => {
                write!(f, "new tasks are found by polling every {}: {reason}", human_duration(*poll_interval))
            }
            Self::Draining { drain_timeout } => write!(
                f,
                "stopping: claiming nothing more, giving running handlers up to {}; \
                 signal again to stop at once",
                human_duration(*drain_timeout)
            ),
            Self::Abandoned { calls, reason } => {
                let why = match reason {
                    AbandonReason::DrainTimeout => "at the drain timeout",
                    AbandonReason::StoppedAtOnce => "to stop at once",
                };
                write!(
                    f,
                    "abandoned {calls} handler call(s) {why}: their tasks stay running until their leases \
                     expire, then another worker retries them"
                )
            }
        }
    }
}

/// What the worker was doing when a store call failed (or was slow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// The read-only probe an idle worker asks before it claims.
    Probe,
    /// The claim transaction.
    Claim,
    /// Renewing the leases of running tasks.
    Heartbeat,
    /// Writing a task's outcome (complete or fail).
    Settle,
    /// The periodic repair of rows no operation would move.
    Repair,
    /// Declaring or firing schedules.
    Schedules,
}

impl Phase {
    /// The phase's name in reports: `probe`, `claim`, `heartbeat`, `settle`,
    /// `repair`, `schedules`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::Claim => "claim",
            Self::Heartbeat => "heartbeat",
            Self::Settle => "settle",
            Self::Repair => "repair",
            Self::Schedules => "schedules",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A phase and the task it was about, as a report names them: `the settle
/// of task X`, `the claim`.
struct Call<'a>(Phase, &'a Option<String>);

impl fmt::Display for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(task_id) => write!(f, "the {} of task {task_id}", self.0),
            None => write!(f, "the {}", self.0),
        }
    }
}

/// The database, named by its endpoint when the store gives one.
struct Database<'a>(&'a Option<String>);

impl fmt::Display for Database<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(endpoint) => write!(f, "the database at {endpoint}"),
            None => f.write_str("the database"),
        }
    }
}

/// The hook that receives [`WorkerIssue`]s.
pub type OnError = Arc<dyn Fn(WorkerIssue) + Send + Sync>;

/// Hands `issue` to `hook`, or logs it naming the worker and, when it is
/// about one attempt, the task.
pub(crate) fn deliver(hook: Option<&OnError>, worker_id: &str, about: Option<&Attempt>, issue: WorkerIssue) {
    match hook {
        Some(hook) => hook(issue),
        None => log(worker_id, about, &issue),
    }
}

/// The issue as a `tracing` event: a stop asked for is news (info), an
/// unusable database an error, everything else a warning. An event about
/// an attempt names it as the settled event does (task_id, name, queue,
/// attempt), and a lost lease its outcome.
fn log(worker_id: &str, about: Option<&Attempt>, issue: &WorkerIssue) {
    let (phase, task_id, error) = match issue {
        WorkerIssue::Store { phase, task_id, error } | WorkerIssue::Unusable { phase, task_id, error, .. } => {
            (Some(phase.as_str()), task_id.as_deref(), Some(error))
        }
        WorkerIssue::Unreachable { phase, error, .. } => (Some(phase.as_str()), None, Some(error)),
        WorkerIssue::SlowStore { phase, .. } => (Some(phase.as_str()), None, None),
        WorkerIssue::WakeupsLost { error, .. } | WorkerIssue::Polling { reason: error, .. } => {
            (None, None, Some(error))
        }
        _ => (None, None, None),
    };
    let task_id = about.map(Attempt::task_id).or(task_id);
    let (name, queue, attempt) = (about.map(Attempt::name), about.map(Attempt::queue), about.map(Attempt::number));
    let outcome = matches!(issue, WorkerIssue::LostLeases { .. }).then(|| Outcome::LostLease.as_str());
    let kind = error.map(|e| format!("{:?}", e.kind()));
    macro_rules! event {
        ($level:ident) => {
            tracing::$level!(worker_id, phase, task_id, name, queue, attempt, outcome, error.kind = kind, "{issue}")
        };
    }
    match issue {
        WorkerIssue::Draining { .. }
        | WorkerIssue::Repaired { .. }
        | WorkerIssue::Reconnected { .. }
        | WorkerIssue::Polling { .. } => event!(info),
        WorkerIssue::Unusable { .. } => event!(error),
        _ => event!(warn),
    }
}

#[cfg(test)]
mod tests {
    //! What a report says.

    use super::*;

    #[test]
    fn a_report_names_the_phase_and_the_task_when_there_is_one() {
        let settle = WorkerIssue::Store {
            phase: Phase::Settle,
            task_id: Some("task_1".into()),
            error: Error::validation("result", "too big"),
        };
        assert!(settle.to_string().starts_with("the settle of task task_1 failed: "), "{settle}");
        let claim =
            WorkerIssue::Unusable { phase: Phase::Claim, task_id: None, error: Error::StoreClosed, stopping: true };
        assert!(claim.to_string().starts_with("the claim failed and waiting will not help"), "{claim}");
        let abandoned = WorkerIssue::Abandoned { calls: 2, reason: AbandonReason::StoppedAtOnce };
        assert!(abandoned.to_string().contains("abandoned 2 handler call(s) to stop at once"), "{abandoned}");
    }

    #[test]
    fn a_store_that_polls_by_design_is_said_with_its_interval() {
        let reason = Error::Storage { message: "no listen URL".into(), source: None, transient: false };
        let polling = WorkerIssue::Polling { reason, poll_interval: Duration::from_millis(500) };
        assert_eq!(polling.to_string(), "new tasks are found by polling every 500ms: storage error: no listen URL");
    }
}
