//! Submitting: the options of a submit, a task ready to submit
//! ([`TaskSpec`]), and the awaitable builder [`CairnQ::submit`] returns.
//! Everything a caller gives is checked here, before the first write.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{CairnQ, WaitOptions, task_outcome};
use crate::clock::span_ms;
use crate::dependencies::DependencyFailure;
use crate::error::{Error, Result, require_non_empty, require_text};
use crate::id::new_task_id;
use crate::json::Json;
use crate::keys::Conflict;
use crate::limit::{KeyUse, validate_key};
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
    /// Higher runs first.
    pub priority: i32,
    /// Claims allowed before a retryable failure becomes final: 1 up to
    /// `i32::MAX` (the column is 32-bit in every SDK).
    pub max_attempts: u32,
    /// Not claimable before now + delay (whole milliseconds are stored; at
    /// most [`MAX_DELAY`](crate::MAX_DELAY), else the submit is refused).
    pub delay: Duration,
    /// A JSON object of caller metadata.
    pub metadata: Option<Json>,
    /// The submitting task.
    pub parent_id: Option<String>,
    /// The chain's first task (defaults to the new task's own id).
    pub root_id: Option<String>,
    /// Caller-chosen correlation id.
    pub correlation_id: Option<String>,
    /// The flow-control key (see [`limit_key`](Self::limit_key)).
    pub limit_key: Option<String>,
    /// The tasks this one waits for (see [`after`](Self::after)).
    pub after: Vec<String>,
    /// What a dependency that fails does to this task (see
    /// [`on_dependency_failure`](Self::on_dependency_failure)).
    pub on_dependency_failure: DependencyFailure,
}

impl Default for SubmitOptions {
    fn default() -> Self {
        Self {
            key: None,
            conflict: Conflict::Reuse,
            queue: "default".to_string(),
            priority: 0,
            max_attempts: 3,
            delay: Duration::ZERO,
            metadata: None,
            parent_id: None,
            root_id: None,
            correlation_id: None,
            limit_key: None,
            after: Vec::new(),
            on_dependency_failure: DependencyFailure::Cancel,
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

    /// Sets the priority (higher runs first).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets max_attempts (1 up to `i32::MAX`; checked at submit).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Delays the first claim.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
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

    /// Puts the task under the limits of `key` ([`Limit`](crate::Limit)):
    /// written to its metadata as the string `limit_key` (replacing one the
    /// metadata holds), which is all any SDK needs to write to submit
    /// limited work. A key holds no `*` and is at most
    /// [`MAX_LIMIT_KEY_LEN`](crate::MAX_LIMIT_KEY_LEN) bytes (checked at
    /// submit).
    ///
    /// ```
    /// use cairnq_core::SubmitOptions;
    /// let task = SubmitOptions::new().limit_key("tenant:42").to_new_task("bill", serde_json::json!({}).into()).unwrap();
    /// assert_eq!(task.metadata.as_str(), r#"{"limit_key":"tenant:42"}"#);
    /// ```
    pub fn limit_key(mut self, key: impl Into<String>) -> Self {
        self.limit_key = Some(key.into());
        self
    }

    /// Makes the task a child of `parent`: `parent`'s id as its parent,
    /// `parent`'s root (or `parent` itself, the first of its chain) as its
    /// root, and `parent`'s correlation id unless one is set already. What a
    /// handler's child submit and `cairnq submit --parent` both do.
    ///
    /// ```
    /// # fn demo(parent: &cairnq_core::Task) {
    /// use cairnq_core::SubmitOptions;
    /// let child = SubmitOptions::new().child_of(parent);
    /// assert_eq!(child.parent_id.as_deref(), Some(parent.id.as_str()));
    /// assert_eq!(child.root_id.as_deref(), Some(parent.root_id.as_deref().unwrap_or(&parent.id)));
    /// # }
    /// ```
    pub fn child_of(mut self, parent: &Task) -> Self {
        self.parent_id = Some(parent.id.clone());
        self.root_id = Some(parent.root_id.clone().unwrap_or_else(|| parent.id.clone()));
        if self.correlation_id.is_none() {
            self.correlation_id = parent.correlation_id.clone();
        }
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
        if self.max_attempts == 0 {
            return Err(Error::validation("max_attempts", "must be at least 1"));
        }
        let max_attempts = i32::try_from(self.max_attempts).map_err(|_| {
            Error::validation("max_attempts", format!("{} is above the 32-bit limit", self.max_attempts))
        })?;
        let delay_ms = span_ms("delay", self.delay)?;
        let metadata = match &self.metadata {
            None => Json::empty_object(),
            Some(m) if m.is_object() => m.clone(),
            Some(_) => return Err(Error::validation("metadata", "must be a JSON object")),
        };
        let metadata = match &self.limit_key {
            Some(key) => with_limit_key(&metadata, key)?,
            None => metadata,
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
            priority: self.priority,
            delay_ms,
            parent_id: self.parent_id.clone(),
            correlation_id: self.correlation_id.clone(),
            key: self.key.clone(),
            conflict: self.conflict,
        })
    }
}

/// `metadata` (an object) with `limit_key` set to `key`, every other
/// member's JSON kept exactly as it was.
fn with_limit_key(metadata: &Json, key: &str) -> Result<Json> {
    validate_key("limit_key", key, KeyUse::Task)?;
    let mut members: std::collections::BTreeMap<String, Json> =
        metadata.decode().map_err(|e| Error::validation("metadata", e.0))?;
    members.insert("limit_key".to_string(), Json::encode(key)?);
    Ok(Json::encode(&members)?)
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

/// A submit under construction: set options, then `.await` it for the
/// task row, or turn it into a [`Call`] with [`call`](Self::call) to wait
/// for the result. `R` is the result type a [`Call`] decodes (a
/// [`TaskDef`](crate::TaskDef) fixes it; plain submits use [`Json`]).
///
/// Its option setters are [`SubmitOptions`]'s, with the same signatures.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// use std::time::Duration;
/// let task = client
///     .submit("send_email", &serde_json::json!({"to": "a@example.com"}))
///     .key("welcome:a@example.com")
///     .priority(10)
///     .await?;
/// let thumbnail = client
///     .submit("thumbnail", &serde_json::json!({"path": "a.png"}))
///     .queue("images")
///     .call(Duration::from_secs(10))
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a submit does nothing until it is awaited"]
pub struct Submit<'a, R = Json> {
    pub(crate) client: &'a CairnQ,
    pub(crate) spec: TaskSpec,
    precondition: Option<Precondition<'a>>,
    result: PhantomData<fn() -> R>,
}

/// A check a submit runs when awaited, before anything else.
type Precondition<'a> = Box<dyn FnOnce() -> Result<()> + Send + 'a>;

/// A submit that waits for its task's outcome: `.await` it for the decoded
/// result, or [`Error::TaskFailed`], [`Error::TaskCanceled`] or
/// [`Error::TaskTimeout`]. Built by [`Submit::call`], [`CairnQ::call`] and
/// [`TaskDef::call`](crate::TaskDef::call); it takes the same option
/// setters as a [`Submit`], and how to wait.
///
/// ```no_run
/// # async fn demo(client: &cairnq_core::CairnQ) -> cairnq_core::Result<()> {
/// use std::time::Duration;
/// let out = client.call("double", &21).key("double:21").timeout(Duration::from_secs(5)).await?;
/// assert_eq!(out.decode::<i64>()?, 42);
/// # Ok(()) }
/// ```
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'a, R = Json> {
    submit: Submit<'a, R>,
    wait: WaitOptions,
}

/// The setters of [`SubmitOptions`], forwarded with identical signatures to
/// the options a builder's `options_mut` gives.
macro_rules! forward_options {
    () => {
        forward_options!(@each
            key(impl Into<String>),
            conflict(Conflict),
            queue(impl Into<String>),
            priority(i32),
            max_attempts(u32),
            delay(Duration),
            metadata(impl Into<Json>),
            parent_id(impl Into<String>),
            root_id(impl Into<String>),
            correlation_id(impl Into<String>),
            limit_key(impl Into<String>),
            after(impl IntoIterator<Item = impl Into<String>>),
            on_dependency_failure(DependencyFailure),
            child_of(&Task),
        );

        /// Replaces every option at once.
        pub fn options(mut self, options: SubmitOptions) -> Self {
            *self.options_mut() = options;
            self
        }
    };
    (@each $($method:ident($ty:ty)),* $(,)?) => {
        $(
            #[doc = concat!("See [`SubmitOptions::", stringify!($method), "`].")]
            pub fn $method(mut self, value: $ty) -> Self {
                let options = std::mem::take(self.options_mut());
                *self.options_mut() = options.$method(value);
                self
            }
        )*
    };
}

impl<'a, R> Submit<'a, R> {
    pub(crate) fn new(client: &'a CairnQ, spec: TaskSpec) -> Self {
        Self { client, spec, precondition: None, result: PhantomData }
    }

    forward_options!();

    /// Runs `check` when the submit (or its [`Call`]) is awaited, before
    /// anything is validated or written: its error is the submit's, and
    /// nothing is written. What a worker's task context uses to refuse
    /// child submits once the parent's lease is lost, however long ago the
    /// submit was built.
    ///
    /// ```
    /// # async fn demo(client: &cairnq_core::CairnQ) {
    /// use cairnq_core::Error;
    /// let refused = client
    ///     .submit("child", &1)
    ///     .precondition(|| Err(Error::validation("parent", "is gone")))
    ///     .await;
    /// assert!(matches!(refused, Err(Error::Validation { field: "parent", .. })));
    /// # }
    /// ```
    pub fn precondition(mut self, check: impl FnOnce() -> Result<()> + Send + 'a) -> Self {
        self.precondition = Some(Box::new(check));
        self
    }

    /// The submit as a future of its own (free of `R`, which a boxed
    /// future of lifetime `'a` could not outlive).
    fn send(self) -> Pin<Box<dyn Future<Output = Result<Task>> + Send + 'a>> {
        let Submit { client, spec, precondition, .. } = self;
        Box::pin(async move {
            if let Some(check) = precondition {
                check()?;
            }
            client.submit_spec(&spec).await
        })
    }

    fn options_mut(&mut self) -> &mut SubmitOptions {
        &mut self.spec.options
    }

    /// Waits for the task's outcome after submitting, `timeout` at most
    /// (the task keeps running after a timeout).
    pub fn call(self, timeout: Duration) -> Call<'a, R> {
        Call { submit: self, wait: WaitOptions::new().timeout(timeout) }
    }
}

impl<'a, R> IntoFuture for Submit<'a, R> {
    type Output = Result<Task>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Task>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        self.send()
    }
}

impl<'a, R> Call<'a, R> {
    pub(crate) fn new(submit: Submit<'a, R>) -> Self {
        Call { submit, wait: WaitOptions::new() }
    }

    forward_options!();

    fn options_mut(&mut self) -> &mut SubmitOptions {
        &mut self.submit.spec.options
    }

    /// Gives up waiting after `timeout` (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.wait = self.wait.timeout(timeout);
        self
    }

    /// Waits as `wait` says (timeout and polling).
    pub fn wait_options(mut self, wait: WaitOptions) -> Self {
        self.wait = wait;
        self
    }
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for Call<'a, R> {
    type Output = Result<R>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<R>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let client = self.submit.client;
            let task = self.submit.send().await?;
            let done = client.wait(&task.id, &self.wait).await?;
            Ok(task_outcome(done)?.decode()?)
        })
    }
}
