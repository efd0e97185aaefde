//! The dashboard's cost as the database grows (issue 16: every page and API
//! call under 100 ms at 1,000,000 tasks). The `scale` workload calls this at
//! each size: a real `cairnq-web` server on a loopback port, asked over real
//! HTTP/1.1 connections exactly as a browser or a script would, so the time
//! includes the routing, the store reads, rendering and the socket.
//!
//! The overview and workers pages are served from a snapshot the server
//! shares between page loads until the queues change, so they are timed
//! twice: as a reload finds them (`web_overview_ms`), and as the first load
//! after a change pays for them (`..._cold_ms`: a new server each time).

use cairnq_core::{CairnQ, Error, ListCursor, Result};
use cairnq_web::WebOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::timing::median_ms;

/// Every page and API read an operator's browser or script makes, by the
/// metric name its time is recorded under. `{id}` is a keyed task's id,
/// `{key}` its key, `{deep}` a cursor in the middle of the history and
/// `{deep_ms}` its time. Every task of the scale mix is on `default`: 85%
/// succeeded (`hist`), 5% failed (`hist_fail`), 10% queued (`noop`).
const ROUTES: &[(&str, &str)] = &[
    ("web_overview_ms", "/"),
    ("web_tasks_ms", "/tasks"),
    ("web_tasks_failed_ms", "/tasks?status=failed"),
    ("web_tasks_queue_ms", "/tasks?queue=default"),
    ("web_tasks_queue_succeeded_ms", "/tasks?queue=default&status=succeeded"),
    ("web_tasks_canceled_ms", "/tasks?status=canceled"),
    ("web_tasks_by_name_ms", "/tasks?name=keyed"),
    ("web_tasks_by_common_name_ms", "/tasks?name=hist"),
    ("web_tasks_by_key_ms", "/tasks?key={key}"),
    ("web_tasks_by_root_ms", "/tasks?root={id}"),
    ("web_tasks_by_correlation_ms", "/tasks?correlation=none"),
    ("web_tasks_deep_ms", "/tasks?after={deep}"),
    ("web_tasks_deep_succeeded_ms", "/tasks?status=succeeded&after={deep}"),
    ("web_tasks_deep_failed_ms", "/tasks?status=failed&after={deep}"),
    ("web_tasks_until_ms", "/tasks?until={deep_ms}"),
    ("web_tasks_since_ms", "/tasks?status=succeeded&since={deep_ms}"),
    ("web_bulk_preview_ms", "/tasks/preview?status=failed&action=retry"),
    ("web_cancel_preview_ms", "/tasks/preview?queue=default&action=cancel"),
    ("web_purge_preview_ms", "/tasks/preview?status=succeeded&action=purge"),
    ("web_preview_by_name_ms", "/tasks/preview?name=hist_fail&action=retry"),
    ("web_detail_ms", "/tasks/{id}"),
    ("web_workers_ms", "/workers"),
    ("web_schedules_ms", "/schedules"),
    ("web_api_stats_ms", "/api/stats"),
    ("web_api_tasks_ms", "/api/tasks"),
    ("web_api_tasks_failed_ms", "/api/tasks?status=failed"),
    ("web_api_task_ms", "/api/tasks/{id}"),
    ("web_api_schedules_ms", "/api/schedules"),
];

/// The pages served from the shared snapshot, timed on a fresh server.
const COLD_ROUTES: &[(&str, &str)] = &[("web_overview_cold_ms", "/"), ("web_workers_cold_ms", "/workers")];

/// What the routes' placeholders stand for.
pub(super) struct Probe<'a> {
    /// A keyed task's id and its key.
    pub(super) task_id: &'a str,
    pub(super) key: &'a str,
    /// A place deep in the history.
    pub(super) deep: &'a ListCursor,
}

impl Probe<'_> {
    fn path(&self, route: &str) -> String {
        route
            .replace("{id}", self.task_id)
            .replace("{key}", self.key)
            .replace("{deep_ms}", &self.deep.created_at_ms.to_string())
            .replace("{deep}", &self.deep.to_string())
    }
}

/// The median time of each route, served from `client`'s database.
pub(super) async fn web_latencies(client: &CairnQ, probe: &Probe<'_>) -> Result<Vec<(&'static str, f64)>> {
    let mut out = Vec::with_capacity(ROUTES.len() + COLD_ROUTES.len());
    let server = Served::start(client).await?;
    for &(metric, route) in ROUTES {
        let path = probe.path(route);
        out.push((metric, median_ms(|_| get(&server.addr, &path)).await?));
    }
    server.stop().await?;
    for &(metric, route) in COLD_ROUTES {
        out.push((metric, median_ms(|_| first_load(client, route)).await?));
    }
    Ok(out)
}

/// A dashboard served on a loopback port until [`Served::stop`].
struct Served {
    addr: String,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<std::result::Result<(), cairnq_web::WebError>>,
}

impl Served {
    async fn start(client: &CairnQ) -> Result<Self> {
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let server = cairnq_web::bind(client.clone(), WebOptions::new().bind(loopback)).await.map_err(refused)?;
        let addr = server.local_addr().to_string();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(server.run_until(async {
            let _ = stopped.await;
        }));
        Ok(Self { addr, stop, serving })
    }

    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        match self.serving.await {
            Ok(served) => served.map_err(refused),
            Err(e) => Err(Error::validation("web bench", e.to_string())),
        }
    }
}

fn refused(e: cairnq_web::WebError) -> Error {
    Error::validation("web bench", e.to_string())
}

/// The first load of `path` on a new server (nothing read before it). The
/// time includes starting and stopping that server (a loopback bind and a
/// shutdown with no connection open), so it is an upper bound.
async fn first_load(client: &CairnQ, path: &str) -> Result<()> {
    let server = Served::start(client).await?;
    let loaded = get(&server.addr, path).await;
    server.stop().await?;
    loaded
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
