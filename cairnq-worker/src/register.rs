//! Handler registration: one naming scheme for the three kinds of handler
//! (`task`, `blocking_task`, `batch_task`), each with a `_with` form that
//! takes per-name [`TaskOptions`]. Each takes the handler's name as a
//! [`TaskDef`](cairnq_core::TaskDef), which fixes the payload and result
//! types so the API side and the handler cannot disagree (a plain string
//! works too, the types then come from the handler). A fallback handler
//! (`fallback_task`) runs every name without a handler of its own.

use cairnq_core::{Error, Result};

use crate::claim_loop::Registered;
use crate::handler::{AsyncHandler, BatchHandler, BlockingHandler, ErasedHandler, TaskName};
use crate::options::TaskOptions;
use crate::worker::Worker;

impl Worker {
    /// Registers an async handler. A [`TaskDef`](cairnq_core::TaskDef)
    /// fixes the payload and result types, so a handler of other types does
    /// not compile:
    ///
    /// ```compile_fail
    /// # fn demo(worker: &mut cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// use cairnq_core::TaskDef;
    /// use cairnq_worker::{TaskContext, TaskError};
    /// const DOUBLE: TaskDef<i64, i64> = TaskDef::new("double");
    /// worker.task(DOUBLE, |_ctx: TaskContext, text: String| async move { Ok::<_, TaskError>(text) })?;
    /// # Ok(()) }
    /// ```
    ///
    /// ```no_run
    /// # fn demo(worker: &mut cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// use cairnq_core::TaskDef;
    /// use cairnq_worker::{TaskContext, TaskError};
    /// const DOUBLE: TaskDef<i64, i64> = TaskDef::new("double");
    /// worker.task(DOUBLE, |_ctx: TaskContext, n: i64| async move { Ok::<_, TaskError>(n * 2) })?;
    /// # Ok(()) }
    /// ```
    pub fn task<N, H, P, R, E>(&mut self, name: N, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: AsyncHandler<P, R, E>,
    {
        self.task_with(name, TaskOptions::new(), handler)
    }

    /// [`task`](Self::task) with per-name options (`concurrency`,
    /// `resource`).
    pub fn task_with<N, H, P, R, E>(&mut self, name: N, options: TaskOptions, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: AsyncHandler<P, R, E>,
    {
        refuse_batch_option(&options)?;
        self.register(name.task_name(), options, handler.erase())
    }

    /// Registers a synchronous handler; it runs on tokio's blocking threads,
    /// never on the runtime's workers, so CPU-heavy or blocking code is safe.
    ///
    /// ```no_run
    /// # fn demo(worker: &mut cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// use cairnq_core::TaskDef;
    /// use cairnq_worker::{TaskContext, TaskError};
    /// const HASH: TaskDef<String, usize> = TaskDef::new("hash");
    /// worker.blocking_task(HASH, |_ctx: TaskContext, text: String| Ok::<_, TaskError>(text.len()))?;
    /// # Ok(()) }
    /// ```
    pub fn blocking_task<N, H, P, R, E>(&mut self, name: N, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: BlockingHandler<P, R, E>,
    {
        self.blocking_task_with(name, TaskOptions::new(), handler)
    }

    /// [`blocking_task`](Self::blocking_task) with per-name options.
    pub fn blocking_task_with<N, H, P, R, E>(&mut self, name: N, options: TaskOptions, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: BlockingHandler<P, R, E>,
    {
        refuse_batch_option(&options)?;
        self.register(name.task_name(), options, handler.erase())
    }

    /// Registers a batch handler: each call gets up to `max_batch` tasks as
    /// [`BatchItem`](crate::BatchItem)s (context and decoded payload). Tasks
    /// the call does not settle itself are settled by how it ends:
    /// `Ok(results)` -> succeeded (with the result under its task id, else
    /// `null`); `Err` -> failed, each with its own backoff.
    ///
    /// ```no_run
    /// # fn demo(worker: &mut cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// use std::collections::HashMap;
    /// use cairnq_core::TaskDef;
    /// use cairnq_worker::{BatchItem, TaskError};
    /// const EMBED: TaskDef<String, usize> = TaskDef::new("embed");
    /// worker.batch_task(EMBED, 64, |batch: Vec<BatchItem<String>>| async move {
    ///     let out: HashMap<String, usize> =
    ///         batch.iter().map(|item| (item.ctx.task_id().to_string(), item.payload.len())).collect();
    ///     Ok::<_, TaskError>(out)
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn batch_task<N, H, P, R, B, E>(&mut self, name: N, max_batch: usize, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: BatchHandler<P, R, B, E>,
    {
        self.batch_task_with(name, TaskOptions::new().batch(max_batch), handler)
    }

    /// [`batch_task`](Self::batch_task) with per-name options; the batch
    /// size is `options.batch` (required).
    pub fn batch_task_with<N, H, P, R, B, E>(&mut self, name: N, options: TaskOptions, handler: H) -> Result<&mut Self>
    where
        N: TaskName<P, R>,
        H: BatchHandler<P, R, B, E>,
    {
        if options.batch.is_none() {
            return Err(Error::validation("batch", "a batch handler needs TaskOptions::batch(n)"));
        }
        self.register(name.task_name(), options, handler.erase())
    }

    /// Registers an async handler for every name that has no handler of
    /// its own: the worker then claims EVERY name on its queues (a name
    /// registered with [`task`](Self::task) and friends still runs its own
    /// handler). Its payload type must decode from any task it may get:
    /// take `serde_json::Value`, or read the payload from the context
    /// ([`TaskContext::payload_json`](crate::TaskContext::payload_json),
    /// [`TaskContext::name`](crate::TaskContext::name)).
    ///
    /// Claims cannot say "every name but these", so a worker with a
    /// fallback refuses, when it starts, names with a draw of their own
    /// (`batch`, per-name `concurrency`, a `resource`).
    ///
    /// ```no_run
    /// # fn demo(worker: &mut cairnq_worker::Worker) -> cairnq_core::Result<()> {
    /// use cairnq_worker::{TaskContext, TaskError};
    /// worker.fallback_task(|ctx: TaskContext, payload: serde_json::Value| async move {
    ///     Ok::<_, TaskError>(serde_json::json!({"name": ctx.name(), "echo": payload}))
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn fallback_task<H, P, R, E>(&mut self, handler: H) -> Result<&mut Self>
    where
        H: AsyncHandler<P, R, E>,
    {
        self.register_fallback(handler.erase())
    }

    pub(crate) fn register_fallback(&mut self, handler: ErasedHandler) -> Result<&mut Self> {
        if self.handlers.fallback.is_some() {
            return Err(Error::validation("fallback", "a fallback handler is already registered"));
        }
        self.handlers.fallback = Some(Registered { handler: handler.0, options: TaskOptions::new() });
        Ok(self)
    }

    pub(crate) fn register(&mut self, name: &str, options: TaskOptions, handler: ErasedHandler) -> Result<&mut Self> {
        if name.is_empty() || name.contains('\0') {
            return Err(Error::validation("name", "must not be empty or hold a NUL character"));
        }
        if self.handlers.by_name.contains_key(name) {
            return Err(Error::validation("name", format!("a handler for {name:?} is already registered")));
        }
        options.validate(&self.options)?;
        self.handlers.by_name.insert(name.to_string(), Registered { handler: handler.0, options });
        Ok(self)
    }
}

fn refuse_batch_option(options: &TaskOptions) -> Result<()> {
    match options.batch {
        Some(_) => Err(Error::validation("batch", "batch handlers are registered with Worker::batch_task")),
        None => Ok(()),
    }
}
