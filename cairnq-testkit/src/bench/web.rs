//! The dashboard's cost as the database grows (issue 16: every page and API
//! call under 100 ms at 1,000,000 tasks). The `scale` workload calls this at
//! each size: a real `cairnq-web` server on a loopback port, asked over real
//! HTTP/1.1 connections exactly as a browser or a script would, so the time
//! includes the routing, the store reads, rendering and the socket.

use cairnq_core::{CairnQ, Error, Result};
use cairnq_web::WebOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::scale::median_ms;

/// Every page and API read an operator's browser or script makes, by the
/// metric name its time is recorded under. `{id}` is a keyed task's id.
const ROUTES: &[(&str, &str)] = &[
    ("web_overview_ms", "/"),
    ("web_tasks_ms", "/tasks"),
    ("web_tasks_failed_ms", "/tasks?status=failed"),
    ("web_tasks_by_name_ms", "/tasks?name=keyed"),
    ("web_bulk_preview_ms", "/tasks/preview?status=failed&action=retry"),
    ("web_detail_ms", "/tasks/{id}"),
    ("web_workers_ms", "/workers"),
    ("web_api_stats_ms", "/api/stats"),
    ("web_api_tasks_ms", "/api/tasks"),
    ("web_api_tasks_failed_ms", "/api/tasks?status=failed"),
    ("web_api_task_ms", "/api/tasks/{id}"),
];

/// The median time of each route, served from `client`'s database.
pub(super) async fn web_latencies(client: &CairnQ, task_id: &str) -> Result<Vec<(&'static str, f64)>> {
    let refused = |e: cairnq_web::WebError| Error::validation("web bench", e.to_string());
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let server = cairnq_web::bind(client.clone(), WebOptions::new().bind(loopback)).await.map_err(refused)?;
    let addr = server.local_addr().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run_until(async {
        let _ = stopped.await;
    }));
    let mut out = Vec::with_capacity(ROUTES.len());
    for &(metric, route) in ROUTES {
        let path = route.replace("{id}", task_id);
        match median_ms(|_| get(&addr, &path)).await {
            Ok(ms) => out.push((metric, ms)),
            Err(e) => {
                serving.abort();
                return Err(e);
            }
        }
    }
    let _ = stop.send(());
    match serving.await {
        Ok(served) => served.map_err(refused)?,
        Err(e) => return Err(Error::validation("web bench", e.to_string())),
    }
    Ok(out)
}

/// One GET on a fresh connection; anything but a whole 200 response is an
/// error, so a broken page can never pass as a fast one.
async fn get(addr: &str, path: &str) -> Result<()> {
    let failed = |what: String| Error::validation("web bench", format!("GET {path}: {what}"));
    let mut stream = TcpStream::connect(addr).await.map_err(|e| failed(e.to_string()))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(|e| failed(e.to_string()))?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.map_err(|e| failed(e.to_string()))?;
    let head = String::from_utf8_lossy(&response[..response.len().min(64)]).into_owned();
    if head.starts_with("HTTP/1.1 200") { Ok(()) } else { Err(failed(head)) }
}
