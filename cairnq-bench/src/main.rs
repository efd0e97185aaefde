//! `cairnq-bench`: runs one end-to-end benchmark workload and prints its
//! measurements as JSON lines (`cargo xtask bench` collects them). Stores
//! come from the testkit's backend factories, as the conformance suite's
//! do; a workload that needs a second process runs this binary again as
//! the testkit's child process (`--child`, then `cairnq_testkit::child`
//! arguments), so the child is built like the bench.
//!
//! ```text
//! cairnq-bench --backend sqlite [--dir DIR] [--quick] --workload burn_down_c64
//! cairnq-bench --backend postgres --dsn DSN --workload call_in_process
//! cairnq-bench --backend sqlite --workload soak --soak-secs 1800
//! cairnq-bench --backend sqlite --workload burn_down_c8_telemetry --burn 2000
//! ```
//!
//! `--burn N` sets the burn-down size (profiling under callgrind, where
//! 20,000 tasks take minutes).
//!
//! The multi-process workloads run it again as a producer or worker
//! (`--role`, see `cairnq_bench::run_role`).

use std::path::PathBuf;
use std::process::ExitCode;

mod cleanup;

use cairnq_bench::{CHILD_FLAG, ROLE_FLAG, Sizes, WORKLOADS, run_role, run_workload};
use cleanup::SchemaCleanup;

struct Args {
    backend: String,
    dsn: Option<String>,
    dir: Option<PathBuf>,
    quick: bool,
    soak_secs: Option<u64>,
    burn: Option<usize>,
    workload: Option<String>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        backend: "sqlite".into(),
        dsn: None,
        dir: None,
        quick: false,
        soak_secs: None,
        burn: None,
        workload: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" => parsed.backend = value()?,
            "--dsn" => parsed.dsn = Some(value()?),
            "--dir" => parsed.dir = Some(PathBuf::from(value()?)),
            "--quick" => parsed.quick = true,
            "--soak-secs" => parsed.soak_secs = Some(value()?.parse().map_err(|_| "--soak-secs takes seconds")?),
            "--burn" => parsed.burn = Some(value()?.parse().map_err(|_| "--burn takes a task count")?),
            "--workload" => parsed.workload = Some(value()?),
            "--list" => {
                println!("{}", WORKLOADS.join("\n"));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

/// Fresh stores as an application would open them: SQLite files (in
/// `--dir` when given) at default durability, Postgres schemas with the
/// default connection options (dropped once the workload is done, see
/// [`cleanup`]).
fn factory(args: &Args) -> Result<SchemaCleanup, String> {
    match args.backend.as_str() {
        "sqlite" => {
            let factory = match &args.dir {
                Some(dir) => cairnq_testkit::sqlite::SqliteFactory::new_in(dir),
                None => cairnq_testkit::sqlite::SqliteFactory::new(),
            };
            Ok(SchemaCleanup::new(Box::new(factory.map_err(|e| e.to_string())?)))
        }
        "postgres" => {
            let dsn = args.dsn.clone().or_else(|| std::env::var("CAIRNQ_TEST_PG_DSN").ok());
            let dsn = dsn.ok_or("--backend postgres needs --dsn or CAIRNQ_TEST_PG_DSN")?;
            let factory = cairnq_testkit::postgres::PostgresFactory::new(dsn);
            Ok(SchemaCleanup::new(Box::new(factory.options(cairnq_postgres::PostgresOptions::new()))))
        }
        other => Err(format!("backend {other:?} is not built into this binary")),
    }
}

async fn run(args: Args) -> Result<(), String> {
    let factory = factory(&args)?;
    let workload = args.workload.as_deref().ok_or("--workload NAME is required (see --list)")?;
    let sizes = if args.quick { Sizes::quick() } else { Sizes::full() };
    let sizes = match args.soak_secs {
        Some(secs) => sizes.with_soak(std::time::Duration::from_secs(secs)),
        None => sizes,
    };
    let sizes = match args.burn {
        Some(tasks) => sizes.with_burn(tasks),
        None => sizes,
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let measured = run_workload(workload, &factory, sizes, &exe).await;
    if let Err(why) = factory.drop_made().await {
        eprintln!("cairnq-bench: {why}");
    }
    let measurements = measured.map_err(|e| format!("{workload}: {e}"))?;
    for m in measurements {
        println!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// The bench binary as a producer or worker process of a multi-process
/// workload (`cairnq_bench::run_role`).
fn run_role_process(args: &[String]) -> ExitCode {
    let outcome = tokio::runtime::Runtime::new()
        .map_err(|e| e.to_string())
        .and_then(|runtime| runtime.block_on(run_role(args)).map_err(|e| e.to_string()));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cairnq-bench {ROLE_FLAG}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return cairnq_testkit::child::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(ROLE_FLAG) {
        return run_role_process(&args[1..]);
    }
    let args = match parse_args(&args) {
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
