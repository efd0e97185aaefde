//! A test subscriber for `tracing`: it keeps every span's name and fields
//! (as text) and, when a span closes, hands it to a callback and keeps it,
//! and keeps every event's fields, so a test can check the spans cairnq
//! opened and the events it told without any exporter.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One span as recorded: its name and every field recorded on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSpan {
    /// The span's name (`send`, `process`).
    pub name: String,
    /// Field name to value, as text.
    pub fields: BTreeMap<String, String>,
}

impl RecordedSpan {
    /// The value of a field, or `""`.
    pub fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// One event as recorded: its level and every field (the text under
/// `message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedEvent {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// Field name to value, as text.
    pub fields: BTreeMap<String, String>,
}

impl RecordedEvent {
    /// The value of a field, or `""`.
    pub fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// Called with each span as it closes.
type OnClose = Box<dyn Fn(&RecordedSpan) + Send + Sync>;

/// Records spans; see the module docs.
///
/// ```no_run
/// use std::sync::Arc;
/// use cairnq_testkit::telemetry::SpanRecorder;
/// let spans = Arc::new(SpanRecorder::new());
/// let _guard = tracing::subscriber::set_default(spans.clone());
/// // ... submit a task ...
/// let send = spans.closed().into_iter().find(|s| s.name == "send");
/// # drop(send);
/// ```
#[derive(Default)]
pub struct SpanRecorder {
    next_id: AtomicU64,
    /// Open spans with their reference counts.
    open: Mutex<HashMap<u64, (RecordedSpan, usize)>>,
    closed: Mutex<Vec<RecordedSpan>>,
    events: Mutex<Vec<RecordedEvent>>,
    on_close: Option<OnClose>,
}

impl fmt::Debug for SpanRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanRecorder").field("closed", &self.closed.lock().len()).finish_non_exhaustive()
    }
}

impl SpanRecorder {
    /// A recorder that keeps closed spans.
    pub fn new() -> Self {
        Self::default()
    }

    /// A recorder that also calls `on_close` with each span as it closes.
    pub fn on_close(on_close: impl Fn(&RecordedSpan) + Send + Sync + 'static) -> Self {
        Self { on_close: Some(Box::new(on_close)), ..Self::default() }
    }

    /// Every span closed so far, in closing order.
    pub fn closed(&self) -> Vec<RecordedSpan> {
        self.closed.lock().clone()
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.events.lock().clone()
    }
}

/// Writes fields into a span's map as text.
struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl Subscriber for SpanRecorder {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut span = RecordedSpan { name: attributes.metadata().name().to_string(), fields: BTreeMap::new() };
        attributes.record(&mut Fields(&mut span.fields));
        self.open.lock().insert(id, (span, 1));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((span, _)) = self.open.lock().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut recorded = RecordedEvent { level: event.metadata().level().to_string(), fields: BTreeMap::new() };
        event.record(&mut Fields(&mut recorded.fields));
        self.events.lock().push(recorded);
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}

    fn clone_span(&self, id: &Id) -> Id {
        if let Some((_, count)) = self.open.lock().get_mut(&id.into_u64()) {
            *count += 1;
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let closed = {
            let mut open = self.open.lock();
            let Some((_, count)) = open.get_mut(&id.into_u64()) else { return false };
            *count -= 1;
            if *count > 0 {
                return false;
            }
            open.remove(&id.into_u64()).map(|(span, _)| span)
        };
        if let Some(span) = closed {
            if let Some(on_close) = &self.on_close {
                on_close(&span);
            }
            self.closed.lock().push(span);
        }
        true
    }
}
