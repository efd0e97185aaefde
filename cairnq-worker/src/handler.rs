//! Handlers with their types erased: a typed `async fn(TaskContext, P) ->
//! Result<R, E>` becomes one closure from a context to a JSON result or a
//! [`TaskError`], so the loop handles every handler the same way.
//!
//! The payload is decoded and the result encoded here, at the JSON
//! boundary: a payload that does not decode is a permanent failure, a result
//! JSON cannot hold (NaN) is a permanent `unserializable_result`.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use cairnq_core::backend::app_code;
use cairnq_core::{ErrorEnvelope, Json, TaskDef, codes};
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::TaskContext;
use crate::task_error::TaskError;

/// What a single-task call ends with.
pub(crate) type SingleResult = Result<Json, TaskError>;
/// What a batch call ends with: per-task results (each may fail to encode).
pub(crate) type BatchResult = Result<Vec<(String, SingleResult)>, TaskError>;

type SingleFn = dyn Fn(TaskContext) -> BoxFuture<'static, SingleResult> + Send + Sync;
type BatchFn = dyn Fn(Vec<TaskContext>) -> BoxFuture<'static, BatchResult> + Send + Sync;

/// A registered handler.
#[derive(Clone)]
pub(crate) enum Handler {
    Single(Arc<SingleFn>),
    Batch(Arc<BatchFn>),
}

/// A name to register a handler under: a string, or a [`TaskDef`] (which
/// then fixes the handler's payload and result types).
pub trait TaskName<P, R> {
    /// The handler name.
    fn task_name(&self) -> &str;
}

impl<P, R> TaskName<P, R> for &str {
    fn task_name(&self) -> &str {
        self
    }
}

impl<P, R> TaskName<P, R> for String {
    fn task_name(&self) -> &str {
        self
    }
}

impl<P, R> TaskName<P, R> for TaskDef<P, R> {
    fn task_name(&self) -> &str {
        self.name()
    }
}

impl<P, R> TaskName<P, R> for &TaskDef<P, R> {
    fn task_name(&self) -> &str {
        self.name()
    }
}

/// What a batch handler returns: results of type `R` by task id (tasks it
/// leaves out succeed with `null`), or `()` for no results.
pub trait BatchResults<R> {
    /// Each task id with its encoded result.
    fn into_results(self) -> Vec<(String, Result<Json, TaskError>)>;
}

impl<R> BatchResults<R> for () {
    fn into_results(self) -> Vec<(String, Result<Json, TaskError>)> {
        Vec::new()
    }
}

impl<R: Serialize> BatchResults<R> for HashMap<String, R> {
    fn into_results(self) -> Vec<(String, Result<Json, TaskError>)> {
        encode_each(self)
    }
}

impl<R: Serialize> BatchResults<R> for BTreeMap<String, R> {
    fn into_results(self) -> Vec<(String, Result<Json, TaskError>)> {
        encode_each(self)
    }
}

impl<R: Serialize> BatchResults<R> for Vec<(String, R)> {
    fn into_results(self) -> Vec<(String, Result<Json, TaskError>)> {
        encode_each(self)
    }
}

fn encode_each<R: Serialize>(results: impl IntoIterator<Item = (String, R)>) -> Vec<(String, Result<Json, TaskError>)> {
    results.into_iter().map(|(id, r)| (id, encode_result(&r))).collect()
}

/// One task of a batch as its handler gets it: the task's context and its
/// payload, decoded. A task whose payload does not decode into `P` never
/// reaches the handler: it fails on its own, permanently.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BatchItem<P> {
    /// The task's context (settle it alone with `ctx.succeed` / `ctx.fail`).
    pub ctx: TaskContext,
    /// The decoded payload.
    pub payload: P,
}

/// A handler ready for the worker, its types erased. Built only by the
/// handler traits below; opaque to callers.
pub struct ErasedHandler(pub(crate) Handler);

/// An async handler: any `Fn(TaskContext, P) -> impl Future<Output =
/// Result<R, E>>` (an `async fn` or a closure with annotated arguments),
/// where `P` decodes from the payload, `R` serializes into the result and
/// `E` converts into a [`TaskError`].
pub trait AsyncHandler<P, R, E>: Send + Sync + 'static {
    /// Erases the handler's types.
    fn erase(self) -> ErasedHandler;
}

impl<F, Fut, P, R, E> AsyncHandler<P, R, E> for F
where
    F: Fn(TaskContext, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    E: Into<TaskError> + 'static,
{
    fn erase(self) -> ErasedHandler {
        let handler = Arc::new(self);
        ErasedHandler(Handler::Single(Arc::new(move |ctx| {
            let handler = handler.clone();
            Box::pin(async move {
                let payload = decode_payload::<P>(&ctx)?;
                let result = handler(ctx, payload).await.map_err(Into::into)?;
                encode_result(&result)
            })
        })))
    }
}

/// A synchronous handler: any `Fn(TaskContext, P) -> Result<R, E>`; it runs
/// on tokio's blocking threads so it never stalls the runtime.
pub trait BlockingHandler<P, R, E>: Send + Sync + 'static {
    /// Erases the handler's types.
    fn erase(self) -> ErasedHandler;
}

impl<F, P, R, E> BlockingHandler<P, R, E> for F
where
    F: Fn(TaskContext, P) -> Result<R, E> + Send + Sync + 'static,
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    E: Into<TaskError> + 'static,
{
    /// Wrapped as an async handler awaiting `spawn_blocking`; a panic is
    /// re-raised on the async side, where the call catches it like any
    /// handler's.
    fn erase(self) -> ErasedHandler {
        let handler = Arc::new(self);
        let on_blocking_thread = move |ctx: TaskContext, payload: P| {
            let handler = handler.clone();
            async move {
                let run =
                    move || app_code(|| handler(ctx, payload)).map_err(Into::into).and_then(|r| encode_result(&r));
                match tokio::task::spawn_blocking(run).await {
                    Ok(outcome) => outcome,
                    Err(joined) => match joined.try_into_panic() {
                        Ok(panic) => std::panic::resume_unwind(panic),
                        Err(_) => Err(TaskError::retryable("the blocking handler was cancelled")),
                    },
                }
            }
        };
        AsyncHandler::erase(on_blocking_thread)
    }
}

/// A batch handler: any `Fn(Vec<BatchItem<P>>) -> impl Future<Output =
/// Result<B, E>>` where `B` is [`BatchResults<R>`](BatchResults).
pub trait BatchHandler<P, R, B, E>: Send + Sync + 'static {
    /// Erases the handler's types.
    fn erase(self) -> ErasedHandler;
}

impl<F, Fut, P, R, B, E> BatchHandler<P, R, B, E> for F
where
    F: Fn(Vec<BatchItem<P>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<B, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    B: BatchResults<R> + 'static,
    E: Into<TaskError> + 'static,
{
    /// Payloads are decoded first; a task whose payload does not decode is
    /// failed on its own (through its context, so the batch's ending does
    /// not settle it again) and left out of the call.
    fn erase(self) -> ErasedHandler {
        let handler = Arc::new(self);
        ErasedHandler(Handler::Batch(Arc::new(move |contexts| {
            let handler = handler.clone();
            Box::pin(async move {
                let mut items = Vec::with_capacity(contexts.len());
                for ctx in contexts {
                    match decode_payload::<P>(&ctx) {
                        Ok(payload) => items.push(BatchItem { ctx, payload }),
                        Err(error) => ctx.fail_reported(error).await,
                    }
                }
                if items.is_empty() {
                    return Ok(Vec::new());
                }
                handler(items).await.map(BatchResults::into_results).map_err(Into::into)
            })
        })))
    }
}

fn decode_payload<P: DeserializeOwned>(ctx: &TaskContext) -> Result<P, TaskError> {
    ctx.payload::<P>().map_err(|e| {
        let message = format!("the payload does not decode into {}: {e}", std::any::type_name::<P>());
        TaskError::from_envelope(ErrorEnvelope::new(codes::HANDLER_ERROR, message).error_type("SerializationError"))
    })
}

fn encode_result<R: Serialize + ?Sized>(result: &R) -> Result<Json, TaskError> {
    Json::encode(result).map_err(|e| {
        let envelope = ErrorEnvelope::new(codes::UNSERIALIZABLE_RESULT, e.to_string()).error_type("SerializationError");
        TaskError::from_envelope(envelope)
    })
}
