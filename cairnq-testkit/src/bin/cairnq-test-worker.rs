//! `cairnq-test-worker`: a worker in its own process, for the worker suite's
//! crash and graceful-stop tests (see `cairnq_testkit::worker_suite::child`).

use std::process::ExitCode;

use cairnq_testkit::worker_suite::child::{ChildArgs, run_child};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match ChildArgs::parse(&args) {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("cairnq-test-worker: {usage}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cairnq-test-worker: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run_child(&args));
    // Do not wait for handlers abandoned at the drain timeout.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cairnq-test-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
