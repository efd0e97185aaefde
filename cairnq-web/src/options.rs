//! What a dashboard is told at start: where to listen, the access token,
//! whether actions are allowed; and the errors a bad combination gets.

use std::net::{Ipv4Addr, SocketAddr};

/// Where [`serve`](crate::serve) listens unless told otherwise: loopback
/// only, port 8080.
pub const DEFAULT_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The environment variable a launcher reads the access token from
/// (`cairnq web` reads it when `--token` is not given).
pub const TOKEN_ENV: &str = "CAIRNQ_WEB_TOKEN";

/// Whether the dashboard may change tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Retry, cancel and purge are offered and served.
    #[default]
    ReadWrite,
    /// Every action is hidden from the pages and refused (403) by the server.
    ReadOnly,
}

/// How a dashboard runs: bind address, access token, [`Access`].
///
/// ```
/// use cairnq_web::{Access, WebOptions};
/// let options = WebOptions::new().bind("0.0.0.0:9000".parse()?).token("s3cret").read_only();
/// assert_eq!(options.access(), Access::ReadOnly);
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Clone, Default)]
pub struct WebOptions {
    bind: Option<SocketAddr>,
    token: Option<String>,
    access: Access,
}

impl std::fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebOptions")
            .field("bind", &self.bind_addr())
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("access", &self.access)
            .finish()
    }
}

impl WebOptions {
    /// Loopback port 8080, no token, read-write.
    pub fn new() -> Self {
        Self::default()
    }

    /// Listen on `addr` ([`serve`](crate::serve) only; a mounted router
    /// listens wherever its application does). A non-loopback address needs
    /// a [`token`](Self::token).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = Some(addr);
        self
    }

    /// Require this access token: sent as `Authorization: Bearer <token>`
    /// by scripts, or entered once on the login page by a browser (which
    /// then holds it in an HttpOnly, SameSite=Strict cookie).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Hide and refuse every action (see [`Access::ReadOnly`]).
    pub fn read_only(mut self) -> Self {
        self.access = Access::ReadOnly;
        self
    }

    /// The address [`serve`](crate::serve) listens on.
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind.unwrap_or(DEFAULT_BIND)
    }

    /// The access token, when one is required.
    pub fn access_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether actions are allowed.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Refuses a token no one could send (empty, or holding characters a
    /// header cannot carry).
    pub(crate) fn checked_token(&self) -> Result<Option<String>, WebError> {
        match &self.token {
            None => Ok(None),
            Some(token) if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) => Err(WebError::BadToken),
            Some(token) => Ok(Some(token.clone())),
        }
    }
}

/// Why a dashboard could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// A non-loopback bind without an access token: anyone on the network
    /// could read every payload and change every task.
    #[error(
        "refusing to serve on {0} without an access token: anyone who can reach it could read and change every task; \
         set a token (--token or CAIRNQ_WEB_TOKEN) or bind 127.0.0.1"
    )]
    TokenRequired(SocketAddr),
    /// The token is empty or holds spaces or control characters.
    #[error("the access token must be non-empty printable ASCII without spaces")]
    BadToken,
    /// The address could not be bound, or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
}
