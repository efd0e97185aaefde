//! What a running worker reports: the problems it survives (or stops for)
//! and the hook that receives them.
//!
//! A worker never prints from library code on its own account beyond the
//! default hook: every report goes through [`WorkerOptions::on_error`](crate::WorkerOptions::on_error)(crate::WorkerOptions::on_error).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::Error;

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
        during: &'static str,
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
    /// The periodic repair (see [`WorkerOptions::repair_every`](crate::WorkerOptions::repair_every)) moved rows
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

/// The hook that receives [`WorkerIssue`]s.
pub type OnError = Arc<dyn Fn(WorkerIssue) + Send + Sync>;
