//! What a dashboard is told at start: where to listen, the access token,
//! whether actions are allowed; and the errors a bad combination gets.

use std::net::{Ipv4Addr, SocketAddr};

/// Where [`serve`](crate::serve) listens unless told otherwise: loopback
/// only, port 8080.
pub const DEFAULT_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The environment variable a launcher reads the access token from
/// (`cairnq web` reads it when `--token` is not given).
pub const TOKEN_ENV: &str = "CAIRNQ_WEB_TOKEN";

/// The fewest characters an access token may have: a token is all that
/// stands between the network and every payload and action, and a short
/// one is guessed (a 3-character token falls to a script in seconds).
pub const MIN_TOKEN_LEN: usize = 16;

/// An address to listen on as an operator writes it: `IP:PORT`,
/// `[IPv6]:PORT`, or `localhost:PORT` (loopback, 127.0.0.1, without asking
/// a resolver: `localhost` is loopback by definition, RFC 6761, and a
/// resolver that said otherwise would expose the dashboard).
///
/// ```
/// let addr = cairnq_web::parse_bind("localhost:8080")?;
/// assert_eq!(addr, "127.0.0.1:8080".parse()?);
/// assert!(cairnq_web::parse_bind("example.com:80").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_bind(text: &str) -> Result<SocketAddr, WebError> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port = text
        .rsplit_once(':')
        .filter(|(host, _)| host.eq_ignore_ascii_case("localhost"))
        .and_then(|(_, port)| port.parse::<u16>().ok());
    match port {
        Some(port) => Ok(SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), port)),
        None => Err(WebError::BadBind(text.to_string())),
    }
}

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
/// let options = WebOptions::new().bind("0.0.0.0:9000".parse()?).token("a-long-random-token").read_only();
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

    /// Require this access token (at least [`MIN_TOKEN_LEN`] printable
    /// ASCII characters): sent as `Authorization: Bearer <token>` by
    /// scripts, or entered once on the login page by a browser (which then
    /// holds an HttpOnly, SameSite=Strict session cookie derived from it,
    /// never the token itself, valid until the dashboard restarts).
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
    /// header cannot carry), and one shorter than [`MIN_TOKEN_LEN`].
    pub(crate) fn checked_token(&self) -> Result<Option<&str>, WebError> {
        match self.token.as_deref() {
            None => Ok(None),
            Some(token) if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) => Err(WebError::BadToken),
            Some(token) if token.len() < MIN_TOKEN_LEN => Err(WebError::WeakToken { length: token.len() }),
            Some(token) => Ok(Some(token)),
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
    /// The token is shorter than [`MIN_TOKEN_LEN`] characters.
    #[error(
        "the access token is {length} characters long; use at least {MIN_TOKEN_LEN} \
         (for example the output of `openssl rand -hex 16`)"
    )]
    WeakToken {
        /// How long the token given is.
        length: usize,
    },
    /// The operating system's random source could not be read (the login
    /// session's key is drawn from it).
    #[error("cannot read the system's random source for the login session key: {0}")]
    Random(String),
    /// A bind address that is neither `IP:PORT` nor `localhost:PORT`.
    #[error("{0:?} is not an address to listen on: give IP:PORT, [IPv6]:PORT or localhost:PORT")]
    BadBind(String),
    /// The address could not be bound, or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
}
