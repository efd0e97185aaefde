//! `--metrics-addr`: the Prometheus text endpoint (`GET /metrics`) of a
//! long-running command. The library only emits through the `metrics`
//! facade; this module installs the process's recorder (the Prometheus
//! exporter) and serves what it holds, on its own listener so a scraper
//! never needs the dashboard's token.

use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::exit::{Exit, Failure};

/// Histogram buckets in seconds: real histograms (not summaries) add up
/// across workers, and these span a fast handler to a long job.
const BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0, 3600.0];

/// Installs the Prometheus recorder and serves `/metrics` on `addr` in the
/// background; says on stderr where (the bound address, so port 0 works).
pub(crate) async fn serve(addr: SocketAddr) -> Result<(), Failure> {
    let handle = PrometheusBuilder::new()
        .set_buckets(BUCKETS)
        .map_err(|e| Failure::new(Exit::Failed, format!("bad histogram buckets: {e}")))?
        .install_recorder()
        .map_err(|e| Failure::new(Exit::Failed, format!("cannot install the metrics recorder: {e}")))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::new(Exit::Failed, format!("cannot listen on {addr} for metrics: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    let app = Router::new().route("/metrics", get(move || render(handle.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await });
    eprintln!("cairnq: metrics at http://{bound}/metrics");
    Ok(())
}

async fn render(handle: PrometheusHandle) -> String {
    // Histograms age out only in upkeep; a scrape is the natural moment.
    handle.run_upkeep();
    handle.render()
}
