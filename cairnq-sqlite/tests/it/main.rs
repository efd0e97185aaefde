//! The SQLite backend's own acceptance tests, all on real files in temp
//! dirs (the shared semantic suite lives in cairnq-testkit and runs from
//! `tests/conformance.rs`).
//!
//! Multi-process tests start the testkit's child process
//! (`cairnq_testkit::child`) on the test's file.

mod bad_input;
mod common;
mod complete_with;
mod concurrency;
mod existing;
mod memory;
mod one_writer;
mod open;
mod plans;
mod repair;
mod schedules;
mod semantics;
mod wakeups;
