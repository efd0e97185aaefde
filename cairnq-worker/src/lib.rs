//! The cairnq worker: claims tasks from any cairnq [`Store`](cairnq_core::Store)
//! and runs handlers for them, side by side with workers of the other cairnq
//! SDKs on the same database.
//!
//! ```no_run
//! use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize)]
//! struct Resize { width: u32 }
//! #[derive(Serialize)]
//! struct Resized { width: u32 }
//!
//! async fn resize(ctx: TaskContext, job: Resize) -> Result<Resized, TaskError> {
//!     ctx.progress(0.5).message("resizing").await?;
//!     Ok(Resized { width: job.width / 2 })
//! }
//!
//! # fn demo(store: impl cairnq_core::Store) -> cairnq_core::Result<()> {
//! let mut worker = Worker::from_store(store, WorkerOptions::new().queues(["images"]).concurrency(4))?;
//! worker.task("resize", resize)?;
//! worker.serve() // until SIGINT / SIGTERM, then drains
//! # }
//! ```
//!
//! # How the loop works
//!
//! - **Claim loop** (one per worker). Each round sizes a claim from what is
//!   running: free call slots (`concurrency` counts handler calls, a batch call
//!   once), per-name caps, resource capacities and the payload byte budget.
//!   It asks the store's read-only `claimable` probe first, so an idle worker
//!   never takes the write lock, then runs ONE claim transaction: lease
//!   recovery, then one draw per name with `batch`, its own `concurrency` or
//!   a resource, and one shared draw for the other names, in an order that
//!   rotates every round. The store applies the limits as shared budgets,
//!   each draw sized by what earlier ones took, so blocked work stays queued
//!   for other workers. Only registered names are claimed. After a claim that
//!   took rows the loop looks again at once (skipping the probe when the
//!   claim filled its limit); with every slot busy it waits for a call to
//!   end; when idle it sleeps on a `Store::notifications` watch taken
//!   before its probe (a push wakeup may cut the poll short, also for a
//!   submit that committed between the probe and the sleep).
//! - **Prefetch.** When every name shares the one draw (no per-name
//!   `batch`, `concurrency` or resource, no byte budget), a claim may take
//!   more rows than free slots: about what the slots get through in two
//!   claim round-trips (2 x concurrency x claim time / mean handler call,
//!   at most 1024), so handlers slower than a claim get almost no buffer.
//!   Buffered rows are leased like running ones (the heartbeat renews them;
//!   one whose lease is lost is dropped unstarted) and start as slots free,
//!   while the next claim runs alongside the calls. Claims and settles of
//!   many tasks then share commits.
//! - **Heartbeat loop** (one per worker). Every `max(50 ms, lease/3)` it
//!   renews all unsettled leases with one `heartbeat_batch`. A task missing
//!   from the reply lost its lease: only that context is flagged
//!   ([`TaskContext::lost_lease`], [`TaskContext::on_lost_lease`]) and its
//!   outcome is discarded; the loss is reported (`WorkerIssue::LostLeases`,
//!   once per task, also when a settle or a context write finds it). A
//!   pending cancel flips [`TaskContext::canceled`]. A tick late by more
//!   than a third of the lease reports a blocked runtime (or a suspended
//!   process); a renewal that itself takes that long reports a slow store.
//! - **Repair loop** (one per worker). At start and every `repair_every`
//!   (60 s) it asks the store to repair rows of its queues that no operation
//!   would move (`Store::repair`: a running row without a lease, a queued
//!   row without a due time) and reports what it repaired.
//! - **Calls.** Each call runs on its own tokio task under a panic guard and
//!   the `max_run` ceiling; blocking handlers run on tokio's blocking
//!   threads. The call's slot frees when the handler is done; the settle
//!   writes follow on the same task (a drain waits for them, the heartbeat
//!   renews their leases until written). How the call ends settles every
//!   task it did not settle itself, through `complete` (so a requested
//!   cancel wins) or `fail` with an error envelope and an attempt-based
//!   backoff delay. Settling is exactly once.
//! - **A failing store.** A failed claim makes the next one wait a capped
//!   exponential backoff with equal jitter (the poll interval, doubling per
//!   failure up to 30 s; reset by a success), never the poll pace. An error
//!   waiting will not heal ([`cairnq_core::Error::is_unusable`]: a
//!   read-only or corrupted database, a missing privilege, another
//!   protocol) is reported once as [`WorkerIssue::Unusable`] and, by
//!   default, stops the worker: [`Worker::run`] returns it.
//!   [`OnUnusable::KeepRetrying`] keeps backing off instead.
//! - **Stop.** `stop()`, a dropped [`WorkerHandle`] or SIGINT/SIGTERM under
//!   [`Worker::serve`] stop claiming; a claim in flight lands, buffered
//!   (not yet started) tasks are run as slots free, and everything gets
//!   `drain_timeout` to finish; then running calls are abandoned and
//!   buffered tasks dropped, their leases left to expire, so another worker
//!   retries them. Buffered tasks are run rather than released through
//!   `fail(retryable, delay 0)`: a release would record an error envelope,
//!   use up the attempt the claim counted, and fail outright a task on its
//!   last attempt, while the buffer holds only a few claim round-trips of
//!   work of handlers that proved fast.
//!   A second SIGINT/SIGTERM during the drain (or
//!   [`Worker::stop_now`]) abandons what still runs at once.
//! - **Lost push wakeups.** When the store's push channel stops for good
//!   (a LISTEN the server refuses), the worker reports it once
//!   ([`WorkerIssue::WakeupsLost`], a warning) and finds work by polling.
//!   A store that polls by design (Postgres in pooler mode without a
//!   listen DSN) is said once at the start ([`WorkerIssue::Polling`], a
//!   notice).
//!
//! # Outcomes
//!
//! | handler | task |
//! |---|---|
//! | `Ok(r)` | succeeded with `r` (canceled if a cancel was requested) |
//! | `Err(e)` from any `std::error::Error` (`?`) | retryable `handler_error`, type = the error's type name |
//! | `Err(TaskError::new(..))` | failed now (permanent, as in the other SDKs) |
//! | `Err(TaskError::retryable(..))` | retryable `task_error` |
//! | panic (also of a `succeed_with` closure) | retryable `handler_error` of type `Panic`, not printed by the panic hook; the worker keeps serving |
//! | result JSON cannot hold (NaN) | failed, `unserializable_result` |
//! | ran past `max_run` | retryable `handler_timeout`, lease marked lost |
//! | claimed name without handler | failed, `no_handler` (only with `claim_unknown_names`) |
//!
//! A fallback handler ([`Worker::fallback_task`], or a command line through
//! `Worker::exec_all`) runs every name that has no handler of its own, and
//! makes the worker claim every name on its queues.
//!
//! # Backends
//!
//! The worker runs unchanged on any store and knows none of them: build
//! the store and use [`Worker::from_store`] or [`Worker::new`].
//!
//! Settling inside the application's own transaction, so a handler's rows
//! and its task's success commit together or not at all, comes from the
//! backend crates over the context's one settle hook
//! ([`cairnq_core::SettleHook`], which [`TaskContext`] implements):
//! `cairnq_postgres::SucceedIn` gives `ctx.succeed_in(&tx, &result)` (the
//! application's tokio-postgres or deadpool transaction),
//! `cairnq_sqlite::SucceedWith` gives `ctx.succeed_with(&store, |conn| ..)`
//! (a closure run on the store's writer thread inside the settle's own
//! transaction). Either way the worker counts the task settled from then
//! on: nothing is written after it, and no lost lease is reported for it. A
//! lost lease rolls the application's writes back (the book's "SQLite vs
//! Postgres" chapter, `docs/src/sqlite-vs-postgres.md`: "The application's
//! own Postgres").
//!
//! `exec` (Unix) adds the `exec` module: a shell command line as a handler,
//! run once per task with the payload on stdin and the result on stdout
//! (`Worker::exec(names, &handler)`, `Worker::exec_all(&handler)`), which
//! makes any language a cairnq worker; `cairnq worker --exec` is built on it.
//!
//! # Known limits
//!
//! - A blocking handler abandoned at `max_run` or at the drain timeout keeps
//!   its thread until it returns (threads cannot be killed); its outcome is
//!   discarded.
//! - A command of the `exec` feature runs in a process group the worker
//!   kills when it abandons the attempt, and its watchdog kills when the
//!   worker dies outright; a process the command moved out of its group
//!   (`setsid`) is beyond both.
//! - A batch draw reserves one call slot for the transaction even when it
//!   then finds nothing; the next round rotates and retries at once.
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "The worker" (`docs/src/worker.md`) is about
//! this crate.

mod call;
mod claim_loop;
mod claim_plan;
mod completions;
mod context;
#[cfg(all(feature = "exec", unix))]
pub mod exec;
mod fan_in;
mod fan_out;
mod handler;
mod heartbeat;
mod issue;
mod observe;
mod options;
mod quiet_panics;
mod register;
mod repair;
mod retries;
mod schedules;
mod settle;
mod settle_in;
mod shared;
mod state;
mod step;
mod step_memo;
mod stop;
mod task_error;
mod wakeups;
mod worker;

pub use context::{Progress, TaskContext};
pub use fan_out::FanOutSettle;
pub use handler::{AsyncHandler, BatchHandler, BatchItem, BatchResults, BlockingHandler, ErasedHandler, TaskName};
pub use issue::{AbandonReason, OnError, Phase, WorkerIssue};
pub use options::{OnUnusable, TaskOptions, WorkerOptions};
pub use step::StepFailure;
pub use task_error::TaskError;
pub use worker::{StopHandle, Worker, WorkerHandle};

/// The README's Rust examples, compiled as doctests so they cannot drift
/// from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
