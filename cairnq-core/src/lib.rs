//! cairnq's core: models, errors, retry backoff, error envelopes, the
//! storage seam ([`Store`]), and every operation written once above it
//! ([`CairnQ`]).
//!
//! This crate never names a database driver. Backends (`cairnq-sqlite`,
//! `cairnq-postgres`, or your own) implement [`Store`]; applications use
//! [`CairnQ`] over whichever backend they picked by dependency.
//!
//! ```no_run
//! # async fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
//! use std::time::Duration;
//! use cairnq_core::CairnQ;
//! let client = CairnQ::new(store);
//! let task = client.submit("thumbnail", &serde_json::json!({"path": "a.png"})).queue("images").await?;
//! let result = client
//!     .submit("thumbnail", &serde_json::json!({"path": "b.png"}))
//!     .queue("images")
//!     .call(Duration::from_secs(30))
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "Concepts" (`docs/src/concepts.md`) is about
//! this crate.

pub mod backend;
pub mod observe;
pub mod store;

mod attempts;
mod backoff;
mod backpressure;
mod client;
mod clock;
mod coalesce;
mod dependencies;
mod envelope;
mod error;
mod flow_tree;
mod human;
mod id;
mod install;
mod json;
mod keys;
mod limit;
mod model;
mod retention;
mod schedule;
mod schedule_policy;
mod settle_hook;
mod step;
mod typed;

pub use backoff::Backoff;
pub use backpressure::{Backpressure, BackpressureGate};
pub use client::{
    BulkAction, BulkOutcome, CairnQ, Call, DEFAULT_GAUGE_INTERVAL, Declared, FireReport, GaugeHandle, QueueGauges,
    Retry, Signal, Submit, SubmitOptions, TaskSpec, WaitOptions, Watch, WorkerSession, task_outcome,
};
pub use clock::{Clock, MAX_DELAY, SystemClock, now_ms};
pub use dependencies::{
    DEPENDENCY_FAILED, DependencyFailure, TaskWait, UnknownDependencyFailure, WAITING_RUN_AT_MS, dependency_failed,
    is_waiting,
};
pub use envelope::{ErrorEnvelope, codes};
pub use error::{BoxError, Error, ErrorKind, Result, StepError, could_not, find_cause};
pub use flow_tree::{Flow, FlowNode, flow_order};
pub use human::{human_duration, human_duration_coarse};
pub use install::{Install, MigrationStatus};
pub use json::{Json, JsonError};
pub use keys::Conflict;
pub use limit::{Limit, LimitInfo, LimitStatus, MAX_LIMIT_KEY_LEN, Rate};
pub use model::{
    HeldLease, ListCursor, ParseCursorError, QueueAge, QueueCounts, Stats, Task, TaskCount, TaskPage, TaskRef,
    TaskStatus, Undecodable, UnknownStatus,
};
pub use retention::{Retention, Sweeper, SweeperHandle};
pub use schedule::{CatchUp, MIN_INTERVAL, Overlap, Schedule, ScheduleInfo, ScheduleOwner, ScheduleSpec, slot_key};
pub use settle_hook::{SettleHook, SettleWrite, Settled, not_the_workers_store};
pub use step::{Step, step_name};
pub use store::{
    Capabilities, Change, ChangeWatch, ListFilter, Notifications, PurgeFilter, Repaired, Store, TaskSelector, Wake,
};
pub use typed::TaskDef;
