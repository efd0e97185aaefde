//! Typed tasks: a handler name bound to a payload type and a result type, so
//! the API side and the worker side agree on Rust types, not JSON shapes.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{CairnQ, Call, Submit, SubmitOptions, TaskSpec, task_outcome};
use crate::error::Result;
use crate::model::Task;

/// A task name with its payload type `P` and result type `R`.
///
/// ```no_run
/// use std::time::Duration;
/// use cairnq_core::{CairnQ, TaskDef};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Resize { width: u32 }
/// #[derive(Serialize, Deserialize)]
/// struct Resized { bytes: u64 }
///
/// const RESIZE: TaskDef<Resize, Resized> = TaskDef::new("resize");
///
/// # async fn demo(client: &CairnQ) -> cairnq_core::Result<()> {
/// let task = RESIZE.submit(client, &Resize { width: 640 }).priority(3).await?;
/// let out: Resized = RESIZE.call(client, &Resize { width: 320 }).priority(5).timeout(Duration::from_secs(10)).await?;
/// let same: Resized = RESIZE.submit(client, &Resize { width: 320 }).key("w320").call(Duration::from_secs(10)).await?;
/// # Ok(()) }
/// ```
pub struct TaskDef<P, R> {
    name: &'static str,
    types: PhantomData<fn(P) -> R>,
}

impl<P, R> TaskDef<P, R> {
    /// A typed task called `name`.
    pub const fn new(name: &'static str) -> Self {
        Self { name, types: PhantomData }
    }

    /// The handler name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<P, R> Clone for TaskDef<P, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P, R> Copy for TaskDef<P, R> {}

impl<P, R> fmt::Debug for TaskDef<P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskDef").field("name", &self.name).finish()
    }
}

impl<P: Serialize, R: DeserializeOwned> TaskDef<P, R> {
    /// Starts a submit of this task; set options on the builder, then
    /// await it (or turn it into a typed [`Call`] with `.call(timeout)`).
    pub fn submit<'a>(&self, client: &'a CairnQ, payload: &P) -> Submit<'a, R> {
        Submit::new(client, TaskSpec::new(self.name, payload))
    }

    /// A [`TaskSpec`] for [`CairnQ::submit_many`].
    pub fn spec(&self, payload: &P, options: SubmitOptions) -> TaskSpec {
        TaskSpec::new(self.name, payload).options(options)
    }

    /// Starts a submit that waits for the typed result: set submit options
    /// and the timeout on the [`Call`], then await it.
    pub fn call<'a>(&self, client: &'a CairnQ, payload: &P) -> Call<'a, R> {
        Call::new(self.submit(client, payload))
    }

    /// The typed result of a terminal task (errors for failed / canceled).
    pub fn result_of(&self, task: Task) -> Result<R> {
        Ok(task_outcome(task)?.decode()?)
    }

    /// The typed payload of a task of this kind.
    pub fn payload_of(&self, task: &Task) -> Result<P>
    where
        P: DeserializeOwned,
    {
        Ok(task.payload_as()?)
    }
}
