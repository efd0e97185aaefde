//! What every request handler shares: the client, the access rules, and the
//! live-update hub.

use std::sync::Arc;

use cairnq_core::CairnQ;

use crate::live::Hub;
use crate::options::Access;

/// The state behind every route.
pub(crate) type AppState = Arc<Shared>;

/// One dashboard's shared state.
pub(crate) struct Shared {
    pub(crate) client: CairnQ,
    /// Required from every caller when set.
    pub(crate) token: Option<String>,
    pub(crate) access: Access,
    pub(crate) hub: Hub,
}

impl Shared {
    pub(crate) fn new(client: CairnQ, token: Option<String>, access: Access) -> Self {
        Self { hub: Hub::new(client.clone()), client, token, access }
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
