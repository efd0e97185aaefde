//! Everything a backend author needs beside the [`Store`](crate::Store)
//! trait: the limit arithmetic of a claim ([`Admission`]), the claim's
//! budget bookkeeping ([`DrawPlan`]), group commit ([`Coalescer`]), change
//! feeds ([`FeedHub`]), in-process push wakeups ([`WakeBoard`]) and the small helpers every backend shares.
//!
//! None of it is SQL: `cairnq_memory::MemoryStore` is built from these
//! alone. The operations written once over SQL, for the SQL backends, live
//! in the `cairnq-sql` crate.

mod admission;
mod app_code;
mod claim_plan;
mod feeds;
mod helpers;
mod wake_board;

pub use admission::{Admission, Gcra, LimitBook};

pub use app_code::{app_code, in_app_code, panic_message};
pub use claim_plan::DrawPlan;
pub use feeds::{FeedHub, broadcast_feed};
pub use helpers::{SubmitRun, fail_undecodable, in_asked_order, lost_lease, narrow, submit_runs};
pub use wake_board::{Changes, WakeBoard, WakeSource};

pub use crate::coalesce::{BatchWrite, Coalescer, Company, Linger};
pub use crate::id::{new_task_id, new_worker_id};
pub use crate::keys::{KeyedSubmit, resolve_key_conflict};
pub use crate::store::TaskRow;
