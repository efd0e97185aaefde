//! `cargo xtask test`: the whole test suite, with what it needs provisioned.
//!
//! Tests use real parts: the Python reference SDK (a venv in `.venv`, for
//! cross-language tests) and a real Postgres server (a throwaway cluster in
//! `target/pg-test`, started through `scripts/pg-test-server.sh`). This chore
//! makes both exist, exports where they are, and runs `cargo test
//! --workspace`, so one command works on a fresh machine.

use std::path::Path;
use std::process::{Command, Stdio};

/// The reference peer, pinned: cross-language tests compare against it.
const PYTHON_PEER: &str = "cairnq[postgres]==0.15.1";
/// The port of the throwaway Postgres test cluster.
const PG_PORT: &str = "54329";
/// The port of the benchmarks' cluster (fsync on).
const PG_BENCH_PORT: &str = "54330";

/// Provisions the peer and the server, runs the tests, stops the server.
pub(crate) fn run_tests(root: &Path, cargo_args: &[String]) -> Result<(), String> {
    let python = ensure_python_peer(root)?;
    let started_pg = std::env::var("CAIRNQ_TEST_PG_DSN").is_err();
    let dsn = postgres_dsn(root)?;
    eprintln!("xtask: python peer {python}; postgres {dsn}");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "--workspace"])
        .args(cargo_args)
        .env("CAIRNQ_PYTHON", &python)
        .env("CAIRNQ_TEST_PG_DSN", &dsn)
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if started_pg {
        stop_postgres(root, "pg-test");
    }
    if status.success() { Ok(()) } else { Err(format!("cargo test failed ({status})")) }
}

/// The venv's python, with the peer SDK installed (created when missing).
pub(crate) fn ensure_python_peer(root: &Path) -> Result<String, String> {
    if let Ok(python) = std::env::var("CAIRNQ_PYTHON") {
        return Ok(python);
    }
    let venv = root.join(".venv");
    let python = venv.join("bin").join("python");
    let has_peer = |python: &Path| {
        Command::new(python)
            .args(["-c", "import cairnq, asyncpg; assert cairnq.__version__ == '0.15.1'"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_peer(&python) {
        eprintln!("xtask: creating {} with {PYTHON_PEER}", venv.display());
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", PYTHON_PEER]))?;
    }
    if !has_peer(&python) {
        return Err(format!("{} cannot import the peer SDK {PYTHON_PEER}", python.display()));
    }
    Ok(python.display().to_string())
}

/// CAIRNQ_TEST_PG_DSN, or the DSN of the throwaway test server (fsync off:
/// test data is disposable), started now.
pub(crate) fn postgres_dsn(root: &Path) -> Result<String, String> {
    match std::env::var("CAIRNQ_TEST_PG_DSN") {
        Ok(dsn) => Ok(dsn),
        Err(_) => start_postgres(root, "pg-test", PG_PORT, "off"),
    }
}

/// CAIRNQ_BENCH_PG_DSN, or a throwaway cluster of its own with fsync ON:
/// benchmarks take no durability shortcut.
pub(crate) fn bench_postgres_dsn(root: &Path) -> Result<String, String> {
    match std::env::var("CAIRNQ_BENCH_PG_DSN") {
        Ok(dsn) => Ok(dsn),
        Err(_) => start_postgres(root, "pg-bench", PG_BENCH_PORT, "on"),
    }
}

fn start_postgres(root: &Path, dir: &str, port: &str, fsync: &str) -> Result<String, String> {
    let dir = root.join("target").join(dir);
    let output = Command::new("bash")
        .arg(root.join("scripts").join("pg-test-server.sh"))
        .arg("start")
        .arg(&dir)
        .arg(port)
        .env("PG_TEST_FSYNC", fsync)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start the test Postgres server: {e}"))?;
    if !output.status.success() {
        return Err("scripts/pg-test-server.sh start failed".to_string());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("postgres"))
        .map(str::to_string)
        .ok_or_else(|| format!("pg-test-server.sh printed no DSN: {stdout}"))
}

/// Stops a throwaway cluster started by this chore (`dir` under target/).
pub(crate) fn stop_postgres(root: &Path, dir: &str) {
    let dir = root.join("target").join(dir);
    let _ = Command::new("bash").arg(root.join("scripts").join("pg-test-server.sh")).arg("stop").arg(&dir).status();
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{command:?} failed ({status})")) }
}
