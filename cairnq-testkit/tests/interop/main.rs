//! Cross-language tests: the Python reference SDK (cairnq==0.15.1 from PyPI,
//! driven as a black box through `interop/peer.py`) and this workspace on
//! the same database, in both directions.
//!
//! Needs the peer: `cargo xtask test` provisions it and sets CAIRNQ_PYTHON.

mod counts;
mod dependencies;
mod ext_names;
mod json_exact;
mod limits;
mod odd_rows;
mod parity;
#[cfg(feature = "postgres")]
mod postgres;
mod random_json;
mod schedules;
mod sqlite;
mod steps;
mod support;
mod waits;
mod worker;
