//! `cairnq-conformance`: runs CONFORMANCE.md scenario files against one of
//! our backends, one fresh database per scenario.
//!
//! ```text
//! cairnq-conformance [--backend sqlite|postgres|memory] [--dsn DSN] [FILE|DIR]...
//! ```
//!
//! With no paths it runs the built-in suite. It prints `PASS name` or
//! `FAIL name: why` per scenario, then `N passed, M failed`, and exits 1 when
//! anything failed or nothing ran (2 on a usage error).

use std::path::PathBuf;
use std::process::ExitCode;

use cairnq_testkit::BackendFactory;
use cairnq_testkit::scenario::{self, Report};

const USAGE: &str = "usage: cairnq-conformance [--backend sqlite|postgres|memory] [--dsn DSN] [FILE|DIR]...";

/// The parsed command line.
#[derive(Debug, Default)]
struct Options {
    backend: Option<String>,
    dsn: Option<String>,
    paths: Vec<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backend" => options.backend = Some(args.next().ok_or("--backend needs a value")?),
            "--dsn" => options.dsn = Some(args.next().ok_or("--dsn needs a value")?),
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            path => options.paths.push(PathBuf::from(path)),
        }
    }
    Ok(options)
}

/// The factory for a backend name; adding a backend is one arm here (and a
/// cargo feature in this crate).
fn factory_for(options: &Options) -> Result<Box<dyn BackendFactory>, String> {
    match options.backend.as_deref().unwrap_or("sqlite") {
        "sqlite" => sqlite_factory(),
        "postgres" => postgres_factory(options.dsn.as_deref().ok_or("--backend postgres needs --dsn")?),
        "memory" => Ok(Box::new(cairnq_testkit::memory::MemoryFactory::new())),
        other => Err(format!("unknown backend {other:?} (sqlite, postgres or memory)")),
    }
}

#[cfg(feature = "sqlite")]
fn sqlite_factory() -> Result<Box<dyn BackendFactory>, String> {
    let factory = cairnq_testkit::sqlite::SqliteFactory::new().map_err(|e| e.to_string())?;
    Ok(Box::new(factory))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_factory() -> Result<Box<dyn BackendFactory>, String> {
    Err("sqlite backend not built in (enable the `sqlite` feature)".to_string())
}

/// Each scenario gets a fresh schema in the database `dsn` names.
#[cfg(feature = "postgres")]
fn postgres_factory(dsn: &str) -> Result<Box<dyn BackendFactory>, String> {
    Ok(Box::new(cairnq_testkit::postgres::PostgresFactory::new(dsn)))
}

#[cfg(not(feature = "postgres"))]
fn postgres_factory(_dsn: &str) -> Result<Box<dyn BackendFactory>, String> {
    Err("postgres backend not built in (enable the `postgres` feature)".to_string())
}

async fn run(options: &Options, factory: &dyn BackendFactory) -> Report {
    if options.paths.is_empty() {
        scenario::run_all(factory).await
    } else {
        scenario::run_paths(factory, &options.paths).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(why) if why.is_empty() => return usage(None),
        Err(why) => return usage(Some(&why)),
    };
    let factory = match factory_for(&options) {
        Ok(factory) => factory,
        Err(why) => return usage(Some(&why)),
    };
    let report = run(&options, factory.as_ref()).await;
    for outcome in &report.outcomes {
        println!("{outcome}");
    }
    println!("{}", report.summary());
    if report.outcomes.is_empty() {
        eprintln!("cairnq-conformance: no scenario file found");
    }
    if report.failed() == 0 && !report.outcomes.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn usage(problem: Option<&str>) -> ExitCode {
    match problem {
        Some(why) => {
            eprintln!("cairnq-conformance: {why}\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
    }
}
