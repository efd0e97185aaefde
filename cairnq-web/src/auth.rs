//! The guard in front of every route: the access token (bearer header or
//! login cookie), read-only mode, and the same-origin check that keeps
//! another site's page from making a visitor's browser act on the queue.
//!
//! A browser always sends `Origin` (and `Sec-Fetch-Site`) on a POST, so a
//! POST that names another origin is refused whatever it carries. A POST
//! naming no origin at all comes from a script (curl), which cannot be
//! tricked into acting for another site: it passes when it carries the
//! bearer token, or when the dashboard has no token.

use axum::Form;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use crate::href;
use crate::html::{PageCtx, layout, refusal};
use crate::session::Session;
use crate::state::AppState;

/// The cookie a logged-in browser holds its session in (see
/// [`Session`]: a value derived from the token, not the token).
const COOKIE: &str = "cairnq_web_session";

/// Who is calling, as far as the token goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// No token is required.
    Open,
    /// Sent the token as `Authorization: Bearer`.
    Bearer,
    /// Sent the login cookie.
    Cookie,
    /// A token is required and was not sent (or was wrong).
    Anonymous,
}

fn caller(session: Option<&Session>, headers: &HeaderMap) -> Caller {
    let Some(session) = session else { return Caller::Open };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if bearer.is_some_and(|sent| session.is_token(sent)) {
        return Caller::Bearer;
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value);
    if cookie.is_some_and(|sent| session.is_session(sent)) {
        return Caller::Cookie;
    }
    Caller::Anonymous
}

/// Whether a browser says this request comes from another origin.
fn cross_origin(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v: &axum::http::HeaderValue| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return true;
    }
    match text(header::ORIGIN.as_str()) {
        None => false,
        Some(origin) => {
            let origin_host = origin.split_once("://").map(|(_, host)| host);
            origin_host.is_none() || origin_host != text(header::HOST.as_str())
        }
    }
}

/// Whether the request names a loopback host (`localhost`, `127.0.0.1`,
/// `[::1]`, any port).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Runs in front of every route.
pub(crate) async fn guard(State(state): State<AppState>, ctx: PageCtx, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let public = path == "/login" || path.starts_with("/assets/");
    let machine = path.starts_with("/api/") || path == "/events";
    if state.loopback_hosts && !loopback_host(request.headers()) {
        return refusal(
            &ctx,
            machine,
            StatusCode::MISDIRECTED_REQUEST,
            "this dashboard answers only to a loopback address",
        );
    }
    let caller = caller(state.token.as_ref(), request.headers());
    if request.method() == Method::POST {
        if caller != Caller::Bearer && cross_origin(request.headers()) {
            return refusal(&ctx, machine, StatusCode::FORBIDDEN, "cross-origin request refused");
        }
        if path != "/login" && !state.writable() {
            return refusal(&ctx, machine, StatusCode::FORBIDDEN, "this dashboard is read-only");
        }
    }
    if caller == Caller::Anonymous && !public {
        if machine || request.method() != Method::GET {
            let mut response = refusal(&ctx, machine, StatusCode::UNAUTHORIZED, "an access token is required");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
        // Back here after the login: the path within the dashboard.
        let asked = request.uri().path_and_query().map_or("/", |p| p.as_str());
        return Redirect::to(&format!("{}/login?{}", ctx.base, href::query(&[("next", asked)]))).into_response();
    }
    next.run(request).await
}

/// `?next=` of the login page: where the user was going.
#[derive(Deserialize)]
pub(crate) struct ReturnTo {
    next: Option<String>,
}

/// The login page.
pub(crate) async fn login_page(ctx: PageCtx, Query(asked): Query<ReturnTo>) -> Response {
    login_form(&ctx, asked.next.as_deref().and_then(local_path), None)
}

/// `next` when it is a path on this dashboard (one leading `/`, not `//`,
/// no backslash, printable ASCII only), else `None`: a login must never send
/// the browser to another site (an open redirect), whatever a link said.
fn local_path(next: &str) -> Option<&str> {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic());
    local.then_some(next)
}

fn login_form(ctx: &PageCtx, next: Option<&str>, problem: Option<&str>) -> Response {
    let body = html! {
        h1 { "Log in" }
        @if let Some(problem) = problem { p.notice.bad { (problem) } }
        form.login #login method="post" action={ (ctx.base) "/login" } {
            @if let Some(next) = next { input type="hidden" name="next" value=(next); }
            label { "Access token " input type="password" name="token" autofocus; }
            button type="submit" { "Log in" }
        }
    };
    layout(ctx, "Log in", false, body)
}

/// The login form's fields.
#[derive(Deserialize)]
pub(crate) struct Login {
    token: String,
    /// Where to go after logging in (see [`local_path`]).
    next: Option<String>,
}

/// Checks the token; on a match, sets the cookie and goes where the user
/// was going (the overview when that is unknown or not a local path).
pub(crate) async fn login(State(state): State<AppState>, ctx: PageCtx, Form(form): Form<Login>) -> Response {
    let next = form.next.as_deref().and_then(local_path);
    let target = next.map_or_else(|| ctx.home().to_string(), |path| format!("{}{path}", ctx.base));
    let Some(session) = state.token.as_ref() else { return Redirect::to(&target).into_response() };
    if !session.is_token(&form.token) {
        let mut response = login_form(&ctx, next, Some("That is not the access token."));
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return response;
    }
    let cookie = format!("{COOKIE}={}; Path={}; HttpOnly; SameSite=Strict", session.cookie(), ctx.home());
    let mut response = Redirect::to(&target).into_response();
    if let Ok(value) = header::HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}
