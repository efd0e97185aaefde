//! Fan-out: a handler ends by settling its task together with the
//! children it splits its work into and one join task waiting for them
//! all, in one transaction of the store
//! ([`WorkerSession::complete_with_fan_out`](cairnq_core::WorkerSession::complete_with_fan_out)).
//! It goes through the worker's one settle claim, as an early
//! [`TaskContext::succeed`] does, so the handler's later return is ignored
//! and a worker that dies before the write leaves neither a child nor the
//! success behind (the attempt runs again after its lease).

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use cairnq_core::store::FanOut;
use cairnq_core::{Json, Result, TaskSpec};
use serde::Serialize;

use crate::context::TaskContext;
use crate::retries::with_transient_retries;

impl TaskContext {
    /// Starts a fan-out: this task succeeds (with a `null` result unless
    /// [`FanOutSettle::result`] sets one) and, in the same transaction,
    /// `children` are submitted and `join` waits for all of them (see
    /// [`SubmitOptions::after`](cairnq_core::SubmitOptions::after); its
    /// handler reads their rows with [`dependencies`](Self::dependencies)).
    /// Children and join get parent, root and correlation ids as
    /// [`submit`](Self::submit) sets them. `.await` it.
    ///
    /// It settles the task: the handler's later return value is ignored,
    /// and a second settle (or a fan-out after [`succeed`](Self::succeed))
    /// writes nothing and answers `None`. Refused with `LostLease`, writing
    /// nothing, once the lease is lost; with a cancel pending the task ends
    /// canceled and no child is written (the answer's `join` is `None`).
    /// Any other error wrote nothing either, and leaves the task to the
    /// handler's return (a `?` fails the attempt, which runs again).
    ///
    /// ```no_run
    /// # async fn split(ctx: cairnq_worker::TaskContext, lines: Vec<String>) -> Result<(), cairnq_worker::TaskError> {
    /// use cairnq_core::{SubmitOptions, TaskDef};
    /// const CHUNK: TaskDef<Vec<String>, u64> = TaskDef::new("count_chunk");
    /// const MERGE: TaskDef<(), u64> = TaskDef::new("merge_counts");
    /// let chunks = lines.chunks(100).map(|c| CHUNK.spec(&c.to_vec(), SubmitOptions::new()));
    /// let written = ctx.fan_out(chunks, MERGE.spec(&(), SubmitOptions::new())).result(&"split").await?;
    /// # Ok(()) }
    /// ```
    pub fn fan_out(&self, children: impl IntoIterator<Item = TaskSpec>, join: TaskSpec) -> FanOutSettle<'_> {
        FanOutSettle { ctx: self, children: children.into_iter().collect(), join, result: Ok(Json::null()) }
    }
}

/// A fan-out under construction ([`TaskContext::fan_out`]); `.await` it
/// for what was written (`None`: the task was settled already).
#[must_use = "a fan-out does nothing until it is awaited"]
pub struct FanOutSettle<'a> {
    ctx: &'a TaskContext,
    children: Vec<TaskSpec>,
    join: TaskSpec,
    result: Result<Json>,
}

impl FanOutSettle<'_> {
    /// The result this task succeeds with (default `null`). A value JSON
    /// cannot hold is the fan-out's error when awaited.
    pub fn result<R: Serialize + ?Sized>(mut self, result: &R) -> Self {
        self.result = Json::encode(result).map_err(Into::into);
        self
    }
}

impl<'a> IntoFuture for FanOutSettle<'a> {
    type Output = Result<Option<FanOut>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Option<FanOut>>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let FanOutSettle { ctx, children, join, result } = self;
            let result = result?;
            let core = ctx.core();
            let write = with_transient_retries(|| {
                core.session.complete_with_fan_out(ctx.task(), result.clone(), &children, &join)
            });
            core.settle_by(ctx.task(), ctx.state(), write).await
        })
    }
}
