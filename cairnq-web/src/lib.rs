//! cairnq's dashboard: see and act on a queue in a browser.
//!
//! Server-rendered pages (overview, tasks, task detail, workers,
//! schedules), live
//! updates by server-sent events fed by [`CairnQ::watch`](cairnq_core::CairnQ::watch), and a JSON API
//! under `/api` that scripts may use too. Everything is one axum
//! [`Router`](axum::Router): serve it on its own with [`serve`] (what
//! `cairnq web` does), or mount it under any path of your own axum app with
//! [`router`] and `Router::nest`.
//!
//! Safe by default: [`serve`] binds loopback and refuses any other address
//! without an access token (of at least [`MIN_TOKEN_LEN`] characters; a
//! browser's login cookie holds a value derived from it, never the token),
//! and warns that it speaks plain HTTP when bound off loopback
//! ([`Server::exposure_warning`]); [`WebOptions::read_only`] hides and refuses every
//! action; actions are POST-only, and a browser's POST must come from the
//! dashboard's own origin (a script's POST with the bearer token, or on a
//! tokenless server, goes through); every value rendered is escaped.
//!
//! ```no_run
//! # async fn demo(client: cairnq_core::CairnQ) -> Result<(), cairnq_web::WebError> {
//! use cairnq_web::WebOptions;
//! // The dashboard alone, on http://127.0.0.1:8080/ (what `cairnq web` runs):
//! cairnq_web::serve(client.clone(), WebOptions::new()).await?;
//!
//! // Or inside an application, under /admin/queue, token required:
//! let options = WebOptions::new().token("a-long-random-token");
//! let app: axum::Router = axum::Router::new().nest("/admin/queue", cairnq_web::router(client, &options)?);
//! # Ok(()) }
//! ```
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "The dashboard" (`docs/src/operating/dashboard.md`) is about
//! this crate.

mod api;
mod assets;
mod auth;
mod chart;
mod events;
mod filter;
mod href;
mod html;
mod live;
mod options;
mod pages;
mod schedule_ops;
mod server;
mod session;
mod snapshot;
mod state;
mod time;

pub use options::{Access, DEFAULT_BIND, MIN_TOKEN_LEN, TOKEN_ENV, WebError, WebOptions, parse_bind};
pub use server::{Server, bind, router, serve};

/// The book's dashboard chapter (`docs/src/operating/dashboard.md`),
/// compiled as doc tests here because its snippets mount the router in
/// axum; the other chapters are compiled by cairnq-bench.
#[cfg(doctest)]
#[doc = include_str!("../../docs/src/operating/dashboard.md")]
struct BookDashboard;
