//! Test instruments for cairnq's telemetry: a `metrics` recorder that counts
//! ([`CountingRecorder`]) and a `tracing` subscriber that keeps spans and
//! events ([`SpanRecorder`]), so the shared suite can check what a worker reports
//! without an exporter.

mod metrics;
mod spans;

pub use metrics::{CountingRecorder, recorder};
pub use spans::{RecordedEvent, RecordedSpan, SpanRecorder};
