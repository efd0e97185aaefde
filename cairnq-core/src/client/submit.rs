//! Submitting: the options of a submit, a task ready to submit
//! ([`TaskSpec`]), and the awaitable builder [`CairnQ::submit`] returns.
//! Everything a caller gives is checked here, before the first write.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;

use crate::client::CairnQ;
use crate::error::{Error, Result, require_non_empty, require_non_negative, require_positive, require_text};
use crate::id::new_task_id;
use crate::json::Json;
use crate::keys::Conflict;
use crate::model::Task;
use crate::store::NewTask;

/// Options of a submit. `Default` gives PROTOCOL.md's defaults: queue
/// `default`, max_attempts 3, priority 0, no delay, no key.
///
/// ```
/// use cairnq_core::{Conflict, SubmitOptions};
/// let opts = SubmitOptions::new().key("invoice-42").conflict(Conflict::Reject).priority(5);
/// assert_eq!(opts.queue, "default");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubmitOptions {
    /// Business key: at most one live task per key (see [`Conflict`]).
    pub key: Option<String>,
    /// What to do when the key already points at a task.
    pub conflict: Conflict,
    /// Queue name.
    pub queue: String,
    /// Higher runs first; must fit in i32.
    pub priority: i64,
    /// Claims allowed before a retryable failure becomes final; >= 1.
    pub max_attempts: i64,
    /// Not claimable before now + delay; >= 0.
    pub delay_ms: i64,
    /// A JSON object of caller metadata.
    pub metadata: Option<Json>,
    /// The submitting task.
    pub parent_id: Option<String>,
    /// The chain's first task (defaults to the new task's own id).
    pub root_id: Option<String>,
    /// Caller-chosen correlation id.
    pub correlation_id: Option<String>,
}

impl Default for SubmitOptions {
    fn default() -> Self {
        Self {
            key: None,
            conflict: Conflict::Reuse,
            queue: "default".to_string(),
            priority: 0,
            max_attempts: 3,
            delay_ms: 0,
            metadata: None,
            parent_id: None,
            root_id: None,
            correlation_id: None,
        }
    }
}

impl SubmitOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the business key.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the conflict strategy.
    pub fn conflict(mut self, conflict: Conflict) -> Self {
        self.conflict = conflict;
        self
    }

    /// Sets the queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    /// Sets the priority.
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    /// Sets max_attempts.
    pub fn max_attempts(mut self, max_attempts: i64) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Delays the first claim by `delay_ms` milliseconds.
    pub fn delay_ms(mut self, delay_ms: i64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// Delays the first claim.
    pub fn delay(self, delay: Duration) -> Self {
        self.delay_ms(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
    }

    /// Sets the metadata object (a `serde_json::Value` or a [`Json`]).
    pub fn metadata(mut self, metadata: impl Into<Json>) -> Self {
        self.metadata = Some(metadata.into());
        self
    }

    /// Sets the parent task.
    pub fn parent_id(mut self, id: impl Into<String>) -> Self {
        self.parent_id = Some(id.into());
        self
    }

    /// Sets the root task.
    pub fn root_id(mut self, id: impl Into<String>) -> Self {
        self.root_id = Some(id.into());
        self
    }

    /// Sets the correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Validates the options for `name` and `payload` and builds the row to
    /// insert, with a fresh id.
    pub fn to_new_task(&self, name: &str, payload: Json) -> Result<NewTask> {
        require_non_empty("name", name)?;
        require_text("name", name)?;
        require_non_empty("queue", &self.queue)?;
        require_text("queue", &self.queue)?;
        if let Some(key) = &self.key {
            require_non_empty("key", key)?;
            require_text("key", key)?;
        }
        for (field, value) in
            [("parent_id", &self.parent_id), ("root_id", &self.root_id), ("correlation_id", &self.correlation_id)]
        {
            if let Some(value) = value {
                require_text(field, value)?;
            }
        }
        let priority = i32::try_from(self.priority)
            .map_err(|_| Error::validation("priority", format!("{} is outside the 32-bit range", self.priority)))?;
        require_positive("max_attempts", self.max_attempts)?;
        let max_attempts = i32::try_from(self.max_attempts).map_err(|_| {
            Error::validation("max_attempts", format!("{} is outside the 32-bit range", self.max_attempts))
        })?;
        require_non_negative("delay_ms", self.delay_ms)?;
        let metadata = match &self.metadata {
            None => Json::empty_object(),
            Some(m) if m.is_object() => m.clone(),
            Some(_) => return Err(Error::validation("metadata", "must be a JSON object")),
        };
        let id = new_task_id();
        Ok(NewTask {
            root_id: self.root_id.clone().unwrap_or_else(|| id.clone()),
            id,
            name: name.to_string(),
            queue: self.queue.clone(),
            payload,
            metadata,
            max_attempts,
            priority,
            delay_ms: self.delay_ms,
            parent_id: self.parent_id.clone(),
            correlation_id: self.correlation_id.clone(),
            key: self.key.clone(),
            conflict: self.conflict,
        })
    }
}

/// A task to submit: name, payload and options. Used by
/// [`CairnQ::submit_many`] and built by [`CairnQ::submit`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    /// Handler name.
    pub name: String,
    /// The payload (already JSON, or the error converting it).
    payload: std::result::Result<Json, String>,
    /// Options.
    pub options: SubmitOptions,
}

impl TaskSpec {
    /// A task with default options. A payload JSON cannot hold is reported
    /// when the spec is submitted.
    pub fn new<P: Serialize + ?Sized>(name: impl Into<String>, payload: &P) -> Self {
        let payload = Json::encode(payload).map_err(|e| e.0);
        Self { name: name.into(), payload, options: SubmitOptions::default() }
    }

    /// With these options.
    pub fn options(mut self, options: SubmitOptions) -> Self {
        self.options = options;
        self
    }

    pub(crate) fn to_new_task(&self) -> Result<NewTask> {
        let payload = self.payload.clone().map_err(Error::Serialization)?;
        self.options.to_new_task(&self.name, payload)
    }
}

/// A submit under construction; `.await` it to submit.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// let task = client
///     .submit("send_email", &serde_json::json!({"to": "a@example.com"}))
///     .key("welcome:a@example.com")
///     .priority(10)
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a submit does nothing until it is awaited"]
pub struct Submit<'a> {
    pub(crate) client: &'a CairnQ,
    pub(crate) spec: TaskSpec,
}

macro_rules! forward_options {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            #[doc = concat!("See [`SubmitOptions::", stringify!($method), "`].")]
            pub fn $method(mut self, value: $ty) -> Self {
                self.spec.options = self.spec.options.$method(value);
                self
            }
        )*
    };
}

impl<'a> Submit<'a> {
    forward_options!(
        key(&str),
        conflict(Conflict),
        queue(&str),
        priority(i64),
        max_attempts(i64),
        delay_ms(i64),
        delay(Duration),
        metadata(impl Into<Json>),
        parent_id(&str),
        root_id(&str),
        correlation_id(&str),
    );

    /// Replaces every option at once.
    pub fn options(mut self, options: SubmitOptions) -> Self {
        self.spec.options = options;
        self
    }
}

impl<'a> IntoFuture for Submit<'a> {
    type Output = Result<Task>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Task>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.client.submit_spec(&self.spec).await })
    }
}
