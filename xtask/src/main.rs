//! Project chores, in Rust so they run the same everywhere cargo does (the
//! cargo-xtask convention): `cargo xtask <command>`.
//!
//! - `tidy`: the layering and documentation invariants (also a `#[test]`).
//! - `test`: the whole test suite with everything it needs: a Python venv
//!   holding the reference peer SDK, and a throwaway Postgres server.
//! - `bench`: the benchmark workloads and micro-benchmarks, recorded in
//!   BENCHMARKS.md with the machine and settings.
//! - `docs`: the book (mdBook, `docs/`) built into `target/book`, its links
//!   checked; `--test` also runs every Rust snippet in it.
//! - `package`: every published crate packaged and built from its package,
//!   and the CLI installed from its packaged crate.

mod bench;
mod docs;
mod package;
mod test_env;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("tidy") => tidy::run(&project_root()),
        Some("test") => test_env::run_tests(&project_root(), &args[1..]),
        Some("bench") => bench::run(&project_root(), &args[1..]),
        Some("docs") => docs::run(&project_root(), &args[1..]),
        Some("package") => package::run(&project_root(), &args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <tidy | test [cargo test args] | docs [--test] | package | bench [--quick] [--peers] [--scale] [--soak DURATION] [--no-standard] [--only scale|processes|soak] [--no-record] | bench --compare REV [--rounds N] [--workloads W,..] [--backends sqlite,postgres] [--quick] [--no-record]>";

/// The workspace root: the parent of this crate's directory.
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}
