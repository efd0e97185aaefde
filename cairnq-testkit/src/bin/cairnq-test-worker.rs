//! `cairnq-test-worker`: the child process of the tests (a worker, a
//! submitter or an opener in a process of its own); the protocol is
//! `cairnq_testkit::child`'s.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    cairnq_testkit::child::main(&args)
}
