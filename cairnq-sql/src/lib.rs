//! The SQL kit of cairnq's backends: the operations whose logic is the same
//! in every SQL dialect, written once over an [`Executor`] ([`flows`],
//! [`limits`], [`schedules`]), driver-neutral statement arguments
//! ([`Query`], [`Arg`]), typed rows decoded once over any driver
//! ([`SqlRow`], [`FromRow`]), the list planner ([`ListProbe`]) and the words of
//! each statement for error messages ([`purpose`]).
//!
//! **Plumbing, exempt from semver.** This crate exists so `cairnq-sqlite`
//! and `cairnq-postgres` share one copy of what is not dialect-specific;
//! its API changes whenever they need it to, in any release. A third-party
//! backend implements [`cairnq_core::Store`] with the helpers of
//! [`cairnq_core::backend`] (as `cairnq_memory::MemoryStore` does) and
//! should not build on this crate.
//!
//! A SQL backend implements [`Executor`] for whatever runs statements in
//! its transaction and calls the flows from its `Store` methods; the
//! protocol's statements come from `cairnq_protocol`, picked by [`Sql`]; a
//! filtered list asks its [`ListProbe`] first, then runs
//! [`Query::list_planned`].
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "Writing a backend" (`docs/src/writing-a-backend.md`) is about
//! this crate.

pub mod after;
pub mod fan_out;
pub mod flows;
mod limit_walk;
pub mod limits;
mod list_plan;
mod purpose;
mod query;
mod rows;
pub mod schedules;
pub mod steps;

pub use cairnq_protocol::{PROTOCOL_VERSION, Sql};
pub use flows::{Executor, Installed, LimitLocks, LimitMode, RangeReads, check_protocol_version};
pub use list_plan::{LIST_CURSOR_SORT_AT_MOST, LIST_SORT_AT_MOST, ListProbe, Matching};
pub use purpose::purpose;
pub use query::{Arg, Query};
pub use rows::{CellError, Decoder, FromRow, Moved, SqlRow};
