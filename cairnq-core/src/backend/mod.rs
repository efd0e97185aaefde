//! Everything a backend author needs beside the [`Store`](crate::Store)
//! trait: the operations written once above the dialects ([`flows`], over
//! an [`Executor`]), driver-neutral statement arguments ([`Query`],
//! [`Arg`]), and the helpers backends share.
//!
//! A SQL backend implements [`Executor`] for whatever runs statements in
//! its transaction and calls the flows from its `Store` methods; the
//! protocol's statements come from `cairnq_protocol`, picked by
//! [`Sql`]. A backend without SQL (see
//! `cairnq_testkit::memory::MemoryStore`) uses only the helpers.

pub mod flows;
mod query;

pub use cairnq_protocol::Sql;
pub use flows::{Executor, Installed, check_protocol_version};
pub use query::{Arg, Query};

pub use crate::keys::{KeyedSubmit, resolve_key_conflict};
pub use crate::store::{DrawPlan, SubmitRun, TaskRow, fail_undecodable, in_asked_order, lost_lease, submit_runs};
