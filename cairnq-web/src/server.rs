//! Assembling the dashboard: the routes, the guard in front of them, and a
//! listener for running it on its own.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use cairnq_core::CairnQ;
use tokio::net::TcpListener;

use crate::options::{WebError, WebOptions};
use crate::session::Session;
use crate::state::{AppState, Shared};
use crate::{api, assets, auth, events, pages};

/// The dashboard as a [`Router`]: mount it at any path of an axum app
/// (`Router::nest("/queue", ...)`; links follow the prefix), or serve it at
/// the root. The bind address of `options` is not used here; the token and
/// [`Access`](crate::Access) are. Refuses an unusable token.
///
/// ```no_run
/// # async fn demo(client: cairnq_core::CairnQ) -> Result<(), Box<dyn std::error::Error>> {
/// let app = axum::Router::new().nest("/queue", cairnq_web::router(client, &cairnq_web::WebOptions::new())?);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
pub fn router(client: CairnQ, options: &WebOptions) -> Result<Router, WebError> {
    Ok(routes(Arc::new(Shared::new(client, session(options)?, options.access()))))
}

/// The session of `options`' token (checked), when one is required.
fn session(options: &WebOptions) -> Result<Option<Session>, WebError> {
    options.checked_token()?.map(Session::new).transpose()
}

fn routes(state: AppState) -> Router {
    Router::new()
        .route("/", get(pages::overview::page))
        .route("/tasks", get(pages::tasks::page))
        .route("/tasks/preview", get(pages::bulk::preview))
        .route("/tasks/bulk", post(pages::bulk::apply))
        .route("/tasks/{id}", get(pages::detail::page))
        .route("/tasks/{id}/retry", post(pages::detail::retry))
        .route("/tasks/{id}/cancel", post(pages::detail::cancel))
        .route("/workers", get(pages::workers::page))
        .route("/schedules", get(pages::schedules::page))
        .route("/limits", get(pages::limits::page))
        .route("/schedules/{name}/delete", get(pages::schedules::confirm_delete).post(pages::schedules::delete))
        .route("/schedules/{name}/{action}", post(pages::schedules::apply))
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/events", get(events::events))
        .route("/assets/{file}", get(assets::serve))
        .route("/api/stats", get(api::stats))
        .route("/api/tasks", get(api::list))
        .route("/api/tasks/{id}", get(api::get))
        .route("/api/tasks/{id}/retry", post(api::retry))
        .route("/api/tasks/{id}/cancel", post(api::cancel))
        .route("/api/schedules", get(api::schedules))
        .route("/api/schedules/{name}/{action}", post(api::schedule_action))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::guard))
        .with_state(state)
}

/// A dashboard bound to its address, not yet serving: [`local_addr`](Self::local_addr)
/// says where (useful with port 0).
pub struct Server {
    listener: TcpListener,
    app: Router,
    addr: SocketAddr,
    state: AppState,
}

/// Binds the dashboard to `options`' address. Refuses a non-loopback address
/// without a token ([`WebError::TokenRequired`]) before binding anything.
///
/// ```no_run
/// # async fn demo(client: cairnq_core::CairnQ) -> Result<(), cairnq_web::WebError> {
/// let server = cairnq_web::bind(client, cairnq_web::WebOptions::new().bind("127.0.0.1:0".parse().unwrap())).await?;
/// println!("dashboard on http://{}/", server.local_addr());
/// server.run().await
/// # }
/// ```
pub async fn bind(client: CairnQ, options: WebOptions) -> Result<Server, WebError> {
    let addr = options.bind_addr();
    if !addr.ip().is_loopback() && options.checked_token()?.is_none() {
        return Err(WebError::TokenRequired(addr));
    }
    let session = session(&options)?;
    let tokenless = session.is_none();
    let shared = Shared::new(client, session, options.access());
    let state: AppState = Arc::new(if tokenless { shared.loopback_hosts_only() } else { shared });
    let app = routes(state.clone());
    let listener = TcpListener::bind(addr).await.map_err(|source| WebError::Io { addr, source })?;
    let addr = listener.local_addr().map_err(|source| WebError::Io { addr, source })?;
    let server = Server { listener, app, addr, state };
    if let Some(warning) = server.exposure_warning() {
        tracing::warn!(%addr, "{warning}");
    }
    Ok(server)
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Server {
    /// The address the dashboard listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What an operator should be told when the dashboard listens beyond
    /// loopback: it speaks plain HTTP, so the token, the session cookie and
    /// every payload cross the network readable by anyone on the path.
    /// `None` on loopback. [`bind`] also logs it (`tracing`, warn level).
    pub fn exposure_warning(&self) -> Option<String> {
        (!self.addr.ip().is_loopback()).then(|| {
            format!(
                "warning: the dashboard on {} speaks plain HTTP: the access token, the session cookie and every \
                 payload cross the network unencrypted; put a TLS-terminating proxy in front of it, or bind loopback",
                self.addr
            )
        })
    }

    /// Serves until the process ends (or serving fails).
    pub async fn run(self) -> Result<(), WebError> {
        self.run_until(std::future::pending()).await
    }

    /// Serves until `shutdown` completes, then finishes the requests in
    /// flight (open event streams are cut).
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), WebError> {
        let addr = self.addr;
        let state = self.state;
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                state.close();
            })
            .await
            .map_err(|source| WebError::Io { addr, source })
    }
}

/// Binds and serves the dashboard until the process ends: what
/// `cairnq web --bind ADDR [--token T] [--read-only]` runs.
///
/// ```no_run
/// # async fn demo(client: cairnq_core::CairnQ) -> Result<(), cairnq_web::WebError> {
/// cairnq_web::serve(client, cairnq_web::WebOptions::new().read_only()).await
/// # }
/// ```
pub async fn serve(client: CairnQ, options: WebOptions) -> Result<(), WebError> {
    bind(client, options).await?.run().await
}
