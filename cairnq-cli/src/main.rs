//! `cairnq`: operate a cairnq queue from the shell (submit, inspect, retry,
//! purge, watch, migrate, diagnose) and run any command line as a worker.
//!
//! The binary is a thin layer over the library's public API
//! (`cairnq_core::CairnQ`, the backends' open and migration status,
//! `cairnq_worker::Worker`): every rule about tasks lives there, so the
//! command behaves exactly like an application would. This file only turns
//! the outcome into output and an exit code (see [`exit`]).
//!
//! The guide to cairnq is its book, in `docs/` of the repository (built
//! by `cargo xtask docs`); its chapter "The `cairnq` command" (`docs/src/operating/cli.md`) is about
//! this crate.

mod cli;
mod commands;
mod db;
mod exit;
mod humanize;
mod log;
mod metrics;
mod output;
mod steps_view;
mod table;

use clap::Parser;
use clap::error::ErrorKind;

use crate::exit::Exit;

fn main() -> std::process::ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage(&error),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return exit::report(&exit::Failure::new(Exit::Failed, format!("cannot start the runtime: {e}"))),
    };
    match runtime.block_on(cli.run()) {
        Ok(code) => code.into(),
        Err(failure) => exit::report(&failure),
    }
}

/// Help and version print as clap writes them; a usage error becomes the
/// one line every failure is (clap's first paragraph, so the arguments a
/// "required arguments were not provided" names stay in; without its tips).
fn usage(error: &clap::Error) -> std::process::ExitCode {
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return u8::try_from(error.exit_code()).unwrap_or(2).into();
    }
    let text = error.render().to_string();
    let first: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let first = if first.is_empty() { "bad arguments".to_string() } else { first.join(" ") };
    let line = first.strip_prefix("error: ").unwrap_or(&first);
    exit::report(&exit::Failure::usage(format!("{line}{} (see --help)", valid_values(error))))
}

/// "; valid values: a, b, c" for a value outside a fixed set (a status, a
/// format), which clap lists only on a later line the one-line error drops.
fn valid_values(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    match error.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if error.kind() == ErrorKind::InvalidValue && !values.is_empty() => {
            format!("; valid values: {}", values.join(", "))
        }
        _ => String::new(),
    }
}
