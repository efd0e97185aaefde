//! What every request handler shares: the client, the access rules, and the
//! live-update hub.

use std::sync::Arc;

use cairnq_core::CairnQ;

use crate::live::Hub;
use crate::options::Access;
use crate::session::Session;

/// The state behind every route.
pub(crate) type AppState = Arc<Shared>;

/// One dashboard's shared state.
pub(crate) struct Shared {
    pub(crate) client: CairnQ,
    /// The token required from every caller, when one is.
    pub(crate) token: Option<Session>,
    pub(crate) access: Access,
    /// Answer only requests addressed to a loopback name (a tokenless
    /// dashboard served on loopback: see [`Shared::loopback_hosts_only`]).
    pub(crate) loopback_hosts: bool,
    pub(crate) hub: Hub,
}

impl Shared {
    pub(crate) fn new(client: CairnQ, token: Option<Session>, access: Access) -> Self {
        Self { hub: Hub::new(client.clone()), client, token, access, loopback_hosts: false }
    }

    /// Refuses requests whose `Host` is not a loopback name. A tokenless
    /// dashboard on loopback trusts whoever reaches it; without this, a web
    /// page whose DNS name was re-pointed at 127.0.0.1 (DNS rebinding) would
    /// be same-origin with the dashboard, read it and act on it.
    pub(crate) fn loopback_hosts_only(mut self) -> Self {
        self.loopback_hosts = true;
        self
    }

    /// Whether actions are allowed.
    pub(crate) fn writable(&self) -> bool {
        self.access == Access::ReadWrite
    }

    /// Ends the open event streams (the server is shutting down).
    pub(crate) fn close(&self) {
        self.hub.close();
    }
}
