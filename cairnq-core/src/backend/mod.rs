//! Everything a backend author needs beside the [`Store`](crate::Store)
//! trait: the operations written once above the dialects ([`flows`], over
//! an [`Executor`]), driver-neutral statement arguments ([`Query`],
//! [`Arg`]), and the helpers backends share.
//!
//! A SQL backend implements [`Executor`] for whatever runs statements in
//! its transaction and calls the flows from its `Store` methods; the
//! protocol's statements come from `cairnq_protocol`, picked by
//! [`Sql`]; a filtered list asks its [`ListProbe`] first, then runs
//! [`Query::list_planned`]. A backend without SQL (see
//! `cairnq_memory::MemoryStore`) uses only the helpers.

mod admission;
pub mod after;
mod app_code;
mod claim_plan;
mod feeds;
pub mod flows;
mod helpers;
mod limit_walk;
pub mod limits;
mod list_plan;
mod purpose;
mod query;
pub mod schedules;

pub use admission::{Admission, Gcra, LimitBook};
pub use cairnq_protocol::Sql;
pub use flows::{Executor, Installed, LimitLocks, LimitMode, check_protocol_version};
pub use list_plan::{LIST_CURSOR_SORT_AT_MOST, LIST_SORT_AT_MOST, ListProbe, Matching};
pub use purpose::purpose;
pub use query::{Arg, Query};

pub use app_code::{app_code, in_app_code, panic_message};
pub use claim_plan::DrawPlan;
pub use feeds::{FeedHub, broadcast_feed};
pub use helpers::{SubmitRun, fail_undecodable, in_asked_order, lost_lease, narrow, submit_runs};

pub use crate::coalesce::{BatchWrite, Coalescer};
pub use crate::id::{new_task_id, new_worker_id};
pub use crate::keys::{KeyedSubmit, resolve_key_conflict};
pub use crate::store::TaskRow;
