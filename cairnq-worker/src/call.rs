//! One handler call, from start to settlement: the handler runs under a
//! panic guard and the `max_run` ceiling, and how it ended decides how every
//! task it did not settle itself is settled.
//!
//! | ending | single task | batch (each unsettled task) |
//! |---|---|---|
//! | returned `Ok` | `complete(result)` | `complete(its result or null)` |
//! | returned `Err(e)` | `fail(e)` | `fail(e)`, each with its own backoff |
//! | panicked | retryable `fail`, type `Panic` | the same |
//! | outran `max_run` | retryable `handler_timeout`, lease marked lost | the same |
//!
//! The call's slot is freed as soon as the handler is done, before the
//! settle writes: `concurrency` counts handler calls, and a slot held
//! through a commit would cap a fast worker at `concurrency` tasks per
//! commit. The settle still runs on the call's task, so a drain waits for
//! it, and the lease stays renewed until the write is done.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnq_core::backend::panic_message;
use cairnq_core::{ErrorEnvelope, Json, codes, human_duration};
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use tracing::Instrument;

use crate::context::TaskContext;
use crate::handler::{BatchResult, Handler, SingleResult};
use crate::quiet_panics::Quiet;
use crate::settle::Settlement;
use crate::shared::Shared;
use crate::state::CallGuard;
use crate::task_error::TaskError;

/// How a handler call ended.
enum Ending<T> {
    Returned(T),
    Panicked(String),
    TimedOut(Duration),
}

/// Runs one call and settles its tasks; `load` is released when the
/// handler is done, before the settle writes.
pub(crate) async fn run_call(core: Arc<Shared>, handler: Handler, contexts: Vec<TaskContext>, load: CallGuard) {
    match handler {
        Handler::Single(call) => {
            let mut endings = Vec::with_capacity(contexts.len());
            for ctx in contexts {
                let span = ctx.state().attempt.span(ctx.task());
                let ending = timed(&core, guarded(core.options.max_run, call(ctx.clone())).instrument(span)).await;
                endings.push((ctx, ending));
            }
            drop(load);
            // Not entered while the settle waits for its write: entering a
            // span on every poll is a cost per task, and the settle's own
            // event names its span (`Attempt::settled`). The span still
            // ends after the settle, with the outcome recorded.
            join_all(endings.into_iter().map(|(ctx, ending)| settle_single(&core, ctx, ending))).await;
        }
        Handler::Batch(call) => {
            // One call runs them all: each task's span is opened (and ends
            // with its settlement), none is the call's.
            for ctx in &contexts {
                drop(ctx.state().attempt.span(ctx.task()));
            }
            let ending = timed(&core, guarded(core.options.max_run, call(contexts.clone()))).await;
            drop(load);
            settle_batch(&core, &contexts, ending).await;
        }
    }
}

/// Runs a handler call, recording how long it took.
async fn timed<T>(core: &Shared, call: impl Future<Output = T>) -> T {
    let start = Instant::now();
    let out = call.await;
    core.load.record_call(start.elapsed());
    out
}

async fn guarded<T>(max_run: Option<Duration>, call: BoxFuture<'static, T>) -> Ending<T> {
    let caught = AssertUnwindSafe(Quiet(call)).catch_unwind();
    let outcome = match max_run {
        Some(limit) => match tokio::time::timeout(limit, caught).await {
            Ok(outcome) => outcome,
            Err(_) => return Ending::TimedOut(limit),
        },
        None => caught.await,
    };
    match outcome {
        Ok(value) => Ending::Returned(value),
        Err(panic) => Ending::Panicked(panic_message(panic.as_ref())),
    }
}

async fn settle_single(core: &Shared, ctx: TaskContext, ending: Ending<SingleResult>) {
    let how = match ending {
        Ending::Returned(Ok(result)) => Settlement::Complete(result),
        Ending::Returned(Err(error)) => Settlement::Fail(error),
        Ending::Panicked(message) => Settlement::Fail(panic_error(format!("the handler panicked: {message}"))),
        Ending::TimedOut(limit) => return abandon(core, &ctx, limit).await,
    };
    core.settle_outcome(ctx.task(), ctx.state(), how).await;
}

async fn settle_batch(core: &Shared, contexts: &[TaskContext], ending: Ending<BatchResult>) {
    let mut results: HashMap<String, SingleResult> = HashMap::new();
    let fallback = match ending {
        Ending::Returned(Ok(returned)) => {
            results.extend(returned);
            Settlement::Complete(Json::null())
        }
        Ending::Returned(Err(error)) => Settlement::Fail(error),
        Ending::Panicked(message) => Settlement::Fail(panic_error(format!("the handler panicked: {message}"))),
        Ending::TimedOut(limit) => {
            join_all(contexts.iter().map(|ctx| abandon(core, ctx, limit))).await;
            return;
        }
    };
    // Settled concurrently so a store that groups commits (SQLite's writer
    // thread) writes a whole batch in a few transactions.
    let settles = contexts.iter().map(|ctx| {
        let how = match results.remove(ctx.task_id()) {
            Some(Ok(result)) => Settlement::Complete(result),
            Some(Err(error)) => Settlement::Fail(error),
            None => fallback.clone(),
        };
        core.settle_outcome(ctx.task(), ctx.state(), how)
    });
    join_all(settles.collect::<Vec<_>>()).await;
}

/// The attempt outran `max_run`: a retryable `handler_timeout`, and the
/// lease marked lost so whatever the handler still does is discarded.
async fn abandon(core: &Shared, ctx: &TaskContext, limit: Duration) {
    let message = format!("the attempt ran longer than max_run, {}, and was abandoned", human_duration(limit));
    let envelope = ErrorEnvelope::retryable(codes::HANDLER_TIMEOUT, message).error_type("HandlerTimeout");
    core.abandon(ctx.task(), ctx.state(), TaskError::from_envelope(envelope)).await;
}

/// What a panic of the handler's own code records: a retryable
/// `handler_error` of type `Panic`, `message` saying what panicked.
pub(crate) fn panic_error(message: String) -> TaskError {
    let envelope = ErrorEnvelope::retryable(codes::HANDLER_ERROR, message).error_type("Panic");
    TaskError::from_envelope(envelope)
}
