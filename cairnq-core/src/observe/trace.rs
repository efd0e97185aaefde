//! The W3C trace context (`traceparent`) a task carries in its metadata,
//! and the producer span of a submit. Other SDKs ignore the key, so it
//! harms no foreign reader.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json::Json;
use crate::store::NewTask;

/// The metadata key the trace context rides under.
pub const TRACEPARENT: &str = "traceparent";

/// A W3C trace context: the trace a span belongs to and the span's own id.
/// Written as `00-<32 hex trace id>-<16 hex span id>-01`.
///
/// ```
/// use cairnq_core::observe::TraceContext;
/// let parent = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// let child = parent.child();
/// assert_eq!(child.trace_id(), parent.trace_id());
/// assert_ne!(child.span_id(), parent.span_id());
/// assert_eq!(TraceContext::parse(&child.to_string()), Some(child));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    span_id: u64,
}

impl TraceContext {
    /// A new trace: random trace and span ids (never zero, which W3C
    /// reserves for "invalid").
    pub fn root() -> Self {
        Self { trace_id: fastrand::u128(1..), span_id: fastrand::u64(1..) }
    }

    /// A span of the same trace under this one.
    pub fn child(&self) -> Self {
        Self { trace_id: self.trace_id, span_id: fastrand::u64(1..) }
    }

    /// The trace id as 32 lower-case hex digits, written straight into a
    /// formatter (a span field takes it with `%`, no string allocated).
    pub fn trace_id_hex(&self) -> impl fmt::Display + Copy + use<> {
        Hex::<32>(self.trace_id)
    }

    /// The span id as 16 lower-case hex digits, written straight into a
    /// formatter.
    pub fn span_id_hex(&self) -> impl fmt::Display + Copy + use<> {
        Hex::<16>(u128::from(self.span_id))
    }

    /// Reads a `traceparent` value; `None` for anything malformed (a bad
    /// value starts a new trace rather than failing the task).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('-');
        let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
        if parts.next().is_some() || !hex(version, 2) || version == "ff" || !hex(flags, 2) {
            return None;
        }
        if !hex(trace, 32) || !hex(span, 16) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok().filter(|id| *id != 0)?;
        let span_id = u64::from_str_radix(span, 16).ok().filter(|id| *id != 0)?;
        Some(Self { trace_id, span_id })
    }

    /// The `traceparent` in a task's metadata, when there is a valid one.
    pub fn from_metadata(metadata: &Json) -> Option<Self> {
        // Borrowed: a worker reads this for every task it claims.
        #[derive(Deserialize)]
        struct Carrier<'a> {
            #[serde(borrow)]
            traceparent: Option<Cow<'a, str>>,
        }
        // Cheap refusal first: most metadata carries no trace.
        if !metadata.as_str().contains(TRACEPARENT) {
            return None;
        }
        let carrier: Carrier = serde_json::from_str(metadata.as_str()).ok()?;
        Self::parse(&carrier.traceparent?)
    }

    /// The trace id, 32 lower-case hex digits.
    pub fn trace_id(&self) -> String {
        self.trace_id_hex().to_string()
    }

    /// The span id, 16 lower-case hex digits.
    pub fn span_id(&self) -> String {
        self.span_id_hex().to_string()
    }

    /// `metadata` with this context under `traceparent` (every other key
    /// kept verbatim); unchanged when it is not an object.
    fn written_into(&self, metadata: &Json) -> Json {
        let Ok(mut object) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(metadata.as_str()) else {
            return metadata.clone();
        };
        let Ok(value) = serde_json::value::to_raw_value(&self.to_string()) else { return metadata.clone() };
        object.insert(TRACEPARENT.to_string(), value);
        serde_json::to_string(&object).ok().and_then(|text| Json::parse(text).ok()).unwrap_or_else(|| metadata.clone())
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-01", self.trace_id_hex(), self.span_id_hex())
    }
}

/// The low `N` hex digits of a number, lower case, zero-padded: what
/// `{:0N$x}` writes, without the formatter's padding machinery (a span
/// field is formatted for every task; measured with callgrind, the padded
/// form cost about three times as many instructions).
#[derive(Clone, Copy)]
struct Hex<const N: usize>(u128);

impl<const N: usize> fmt::Display for Hex<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; N];
        for (i, digit) in text.iter_mut().enumerate() {
            let shift = 4 * (N - 1 - i);
            *digit = DIGITS[((self.0 >> shift) & 0xf) as usize];
        }
        // Every byte is an ASCII hex digit.
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

/// The producer span of one submit (`send QUEUE` in OpenTelemetry's
/// messaging conventions). When a subscriber records it, the span gets
/// trace ids (continuing a `traceparent` already in the metadata) and the
/// task's metadata gets the span's own `traceparent`.
pub(crate) fn send_span(task: &mut NewTask) -> tracing::Span {
    if !tracing::enabled!(tracing::Level::INFO) {
        return tracing::Span::none();
    }
    let parent = TraceContext::from_metadata(&task.metadata);
    let context = parent.map_or_else(TraceContext::root, |p| p.child());
    let span = tracing::info_span!(
        "send",
        otel.name = %format_args!("send {}", task.queue),
        otel.kind = %"producer",
        messaging.system = %"cairnq",
        messaging.operation.type = %"send",
        messaging.destination.name = %task.queue,
        messaging.message.id = %task.id,
        cairnq.task.name = %task.name,
        trace_id = %context.trace_id_hex(),
        span_id = %context.span_id_hex(),
        parent_span_id = parent.map(|p| tracing::field::display(p.span_id_hex())),
    );
    // Only a span someone records has a context worth passing on.
    if !span.is_disabled() {
        task.metadata = context.written_into(&task.metadata);
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_width_lower_case_hex() {
        let context = TraceContext { trace_id: 0xAB, span_id: u64::MAX };
        assert_eq!(context.trace_id(), format!("{:032x}", 0xABu128));
        assert_eq!(context.span_id(), "ffffffffffffffff");
        let random = TraceContext::root();
        assert_eq!(random.trace_id(), format!("{:032x}", random.trace_id));
        assert_eq!(random.span_id(), format!("{:016x}", random.span_id));
        assert_eq!(TraceContext::parse(&random.to_string()), Some(random));
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_context_joins_the_metadata_keeping_every_other_key_verbatim() {
        let metadata =
            Json::parse(r#"{"big": 123456789012345678901234567890, "traceparent": "x"}"#.into()).expect("valid JSON");
        let context = TraceContext::root();
        let written = context.written_into(&metadata);
        assert!(written.as_str().contains("123456789012345678901234567890"), "{}", written.as_str());
        assert_eq!(TraceContext::from_metadata(&written), Some(context));
    }
}
