//! Telemetry on, for the workloads that measure its cost: the real
//! Prometheus recorder (rendered once a second, as a busy scraper would)
//! and the subscriber applications use (tracing-subscriber's fmt at INFO,
//! the usual production level, formatting every span and event and writing
//! them to a sink).
//! Each workload runs in a process of its own, so installing the process's
//! globals here touches no other measurement. `CAIRNQ_BENCH_NO_TRACING=1`
//! leaves the subscriber out (metrics alone).

use std::time::Duration;

use cairnq_core::{Error, Result};
use metrics_exporter_prometheus::PrometheusBuilder;

/// Installs the recorder and the subscriber for the rest of the process.
pub(super) fn install() -> Result<()> {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .map_err(|e| Error::validation("telemetry", format!("a metrics recorder is already set: {e}")))?;
    if std::env::var("CAIRNQ_BENCH_NO_TRACING").is_err() {
        let subscriber =
            tracing_subscriber::fmt().with_writer(std::io::sink).with_max_level(tracing::Level::INFO).finish();
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|e| Error::validation("telemetry", format!("a tracing subscriber is already set: {e}")))?;
    }
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            handle.run_upkeep();
            std::hint::black_box(handle.render());
        }
    });
    Ok(())
}
