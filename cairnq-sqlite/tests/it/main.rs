//! The SQLite backend's own acceptance tests, all on real files in temp
//! dirs (the shared semantic suite lives in cairnq-testkit).
//!
//! Multi-process tests spawn this very test binary as a child, running the
//! ignored `child_process_entry` test with `CAIRNQ_SQLITE_CHILD` naming what
//! the child does.

mod bad_input;
mod child;
mod common;
mod concurrency;
mod crash;
mod memory;
mod one_writer;
mod open;
mod plans;
mod repair;
mod semantics;
mod wakeups;

/// Entry point of child processes; ignored in normal runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run only as a child process by the multi-process tests"]
async fn child_process_entry() {
    child::run_from_env().await;
}
