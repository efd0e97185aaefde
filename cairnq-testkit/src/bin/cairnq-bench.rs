//! `cairnq-bench`: runs one end-to-end benchmark workload and prints its
//! measurements as JSON lines (`cargo xtask bench` collects them), or plays
//! a child-process role for a workload that needs a second process.
//!
//! ```text
//! cairnq-bench --backend sqlite [--dir DIR] [--quick] --workload burn_down_c64
//! cairnq-bench --backend postgres --dsn DSN --workload call_in_process
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use cairnq_testkit::bench::{BenchBackend, Sizes, WORKLOADS, run_child_role, run_workload};

struct Args {
    backend: String,
    dsn: Option<String>,
    dir: Option<PathBuf>,
    quick: bool,
    workload: Option<String>,
    role: Option<String>,
    locator: Option<String>,
    count: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backend: "sqlite".into(),
        dsn: None,
        dir: None,
        quick: false,
        workload: None,
        role: None,
        locator: None,
        count: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" => args.backend = value()?,
            "--dsn" => args.dsn = Some(value()?),
            "--dir" => args.dir = Some(PathBuf::from(value()?)),
            "--quick" => args.quick = true,
            "--workload" => args.workload = Some(value()?),
            "--role" => args.role = Some(value()?),
            "--locator" => args.locator = Some(value()?),
            "--count" => args.count = value()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--list" => {
                println!("{}", WORKLOADS.join("\n"));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn backend(args: &Args, scratch: &tempfile::TempDir) -> Result<BenchBackend, String> {
    match args.backend.as_str() {
        "sqlite" => Ok(BenchBackend::Sqlite { dir: args.dir.clone().unwrap_or_else(|| scratch.path().to_path_buf()) }),
        #[cfg(feature = "postgres")]
        "postgres" => {
            let dsn = args.dsn.clone().or_else(|| std::env::var("CAIRNQ_TEST_PG_DSN").ok());
            Ok(BenchBackend::Postgres { dsn: dsn.ok_or("--backend postgres needs --dsn or CAIRNQ_TEST_PG_DSN")? })
        }
        other => Err(format!("backend {other:?} is not built into this binary")),
    }
}

async fn run(args: Args) -> Result<(), String> {
    let scratch = tempfile::Builder::new().prefix("cairnq-bench-").tempdir().map_err(|e| e.to_string())?;
    let backend = backend(&args, &scratch)?;
    if let Some(role) = &args.role {
        let locator = args.locator.as_deref().ok_or("--role needs --locator")?;
        return run_child_role(role, &backend, locator, args.count).await.map_err(|e| e.to_string());
    }
    let workload = args.workload.as_deref().ok_or("--workload NAME is required (see --list)")?;
    let sizes = if args.quick { Sizes::quick() } else { Sizes::full() };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let measurements = run_workload(workload, &backend, sizes, &exe).await.map_err(|e| format!("{workload}: {e}"))?;
    for m in measurements {
        println!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("cairnq-bench: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cairnq-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cairnq-bench: {message}");
            ExitCode::FAILURE
        }
    }
}
