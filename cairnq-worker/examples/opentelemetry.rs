//! cairnq's spans exported through OpenTelemetry: a `tracing-opentelemetry`
//! layer over an SDK tracer provider whose exporter prints each finished
//! span to stdout. A real application swaps the stdout exporter for OTLP;
//! nothing else changes.
//!
//! ```text
//! cargo run -p cairnq-worker --example opentelemetry
//! ```
//!
//! # How cairnq's `traceparent` meets OpenTelemetry's ids
//!
//! cairnq keeps W3C trace ids of its own (the `trace_id`, `span_id` and
//! `parent_span_id` span fields) and carries them from the submit to the
//! worker in the task's metadata under `traceparent`. The OpenTelemetry
//! layer does not read those fields: it gives every span an id of its own
//! and takes the parent from the enclosing `tracing` span. So:
//!
//! - **Producer side**: put the caller's OpenTelemetry context into the
//!   metadata as `traceparent` before submitting (done below with the W3C
//!   propagator). cairnq's `send` span then continues that trace, so its
//!   `trace_id` field equals the OpenTelemetry trace id of the request.
//! - **Worker side**: the `process` span is a new OpenTelemetry root (the
//!   worker loop has no parent span), and it is already started when the
//!   handler runs, so its OpenTelemetry parent can no longer be set. The
//!   handler instead adds a span link to the context in the task's
//!   `traceparent`: the link's trace id is the request's trace, its span id
//!   is cairnq's id of the `send` span (the exported `send` span carries it
//!   as its `span_id` attribute, since OpenTelemetry gave that span another
//!   id). Backends show the link as "follows from" the producer's trace.
//!
//! Here both halves share one process to keep the example short; across
//! processes the metadata is the only carrier, and the same code applies.

use std::collections::HashMap;

use cairnq_core::observe::TRACEPARENT;
use cairnq_core::{CairnQ, TaskDef, WaitOptions};
use cairnq_sqlite::SqliteStore;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerOptions};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::{Deserialize, Serialize};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Serialize, Deserialize)]
struct Email {
    to: String,
}

/// The task both sides agree on.
const SEND_EMAIL: TaskDef<Email, ()> = TaskDef::new("send_email");

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // The exporter: every span printed when it ends (the simple processor,
    // so nothing waits in a batch when the example exits).
    let provider =
        SdkTracerProvider::builder().with_simple_exporter(opentelemetry_stdout::SpanExporter::default()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("cairnq-example"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))?;

    let dir = tempfile::tempdir()?;
    let client = CairnQ::new(SqliteStore::open(dir.path().join("tasks.db")).await?);
    let mut worker = Worker::new(client.clone(), WorkerOptions::new())?;
    worker.task(SEND_EMAIL, send_email)?;
    let running = worker.spawn();

    let id = submit_in_request(&client).instrument(tracing::info_span!("POST /signup")).await?;
    let task = client.wait(&id, &WaitOptions::default()).await?;
    println!("task {id} ended {:?}", task.status);

    running.stop_and_join().await?;
    client.close().await?;
    // Ends the provider: every span is exported before the process exits.
    provider.shutdown()?;
    Ok(())
}

/// The producer inside a request span: its OpenTelemetry context goes into
/// the task's metadata, so cairnq's `send` span continues the same trace.
async fn submit_in_request(client: &CairnQ) -> Result<String, BoxError> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&tracing::Span::current().context(), &mut carrier);
    let metadata = serde_json::json!({ TRACEPARENT: carrier.get(TRACEPARENT) });
    let task = SEND_EMAIL.submit(client, &Email { to: "ada@example.com".into() }).metadata(metadata).await?;
    Ok(task.id)
}

/// The handler, inside the worker's `process` span: links that span to the
/// producer's trace, then does its work in a child span.
async fn send_email(ctx: TaskContext, email: Email) -> Result<(), TaskError> {
    link_to_producer(&ctx);
    let span = tracing::info_span!("smtp", recipient = %email.to);
    async { tokio::task::yield_now().await }.instrument(span).await;
    Ok(())
}

/// Adds a span link from the current (`process`) span to the context in
/// the task's `traceparent`, when the metadata has one.
fn link_to_producer(ctx: &TaskContext) {
    #[derive(Deserialize)]
    struct Carrier {
        traceparent: Option<String>,
    }
    let Ok(Carrier { traceparent: Some(traceparent) }) = serde_json::from_str(ctx.metadata().as_str()) else {
        return;
    };
    let carrier = HashMap::from([(TRACEPARENT.to_string(), traceparent)]);
    let producer = TraceContextPropagator::new().extract(&carrier);
    tracing::Span::current().add_link(producer.span().span_context().clone());
}
