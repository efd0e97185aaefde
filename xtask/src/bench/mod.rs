//! `cargo xtask bench [--quick] [--peers] [--scale] [--soak 30m] [--no-standard] [--no-record]`:
//! measured speed.
//!
//! Runs every end-to-end workload of `cairnq-bench` (release build, one
//! process per workload) on SQLite — a temp file at default durability, WAL +
//! synchronous FULL — and on Postgres when a server is at hand (the test
//! server of `cargo xtask test`), then the criterion micro-benchmarks of the
//! hot statements. `--peers` runs the same workloads through the Python SDK
//! in the same run and prints the ratios. The table is printed and, unless
//! `--no-record`, appended to BENCHMARKS.md with the machine and settings.
//!
//! `--scale` adds the growth workloads (`curves`: costs at 10,000 /
//! 100,000 / 1,000,000 tasks, with charts written to `bench-charts/`), many
//! processes on one database, and a 2-minute soak; `--soak DURATION` runs
//! the soak for that long (`soak`; its chart's file name carries the
//! length and the run's time, so no later run overwrites a recorded chart).
//! `--quick` runs small versions of all of them, and the 2-minute soak. `--no-standard` skips the standard workloads and criterion, to
//! rerun only what the other flags add; `--only NAME` runs just one of
//! the added workloads (`scale`, `processes`, `soak`).
//!
//! The floors (`raw_submit`, `raw_multi_row_insert`, `raw_burn_down`: the
//! engine's statements with nothing around them) run among the workloads,
//! and the report shows each engine workload as a ratio of its floor
//! (`floors`).
//!
//! `--compare REV` (module `compare`) builds the bench at another revision
//! and runs chosen workloads interleaved with the working tree's build: the
//! step before claiming any change on a hot path.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::test_env;

mod chart;
mod compare;
mod curves;
mod floors;
mod rows;
mod soak;
mod summary;

use rows::{Row, parse_rows};

struct Flags {
    quick: bool,
    peers: bool,
    record: bool,
    /// The growth curves and multi-process workloads.
    scale: bool,
    /// The standard workloads and criterion (off with `--no-standard`).
    standard: bool,
    /// The soak's length in seconds, when one runs (`--soak`, or the
    /// default length of `--scale` / `--quick`).
    soak_secs: Option<u64>,
    /// `--only NAME`: of the added workloads (scale, processes, soak), run
    /// just this one.
    only: Option<String>,
}

impl Flags {
    fn runs(&self, workload: &str) -> bool {
        self.only.as_deref().is_none_or(|only| only == workload)
    }

    /// How long the soak runs: `--soak`, else the 2 minutes of `--scale`
    /// and `--quick` (the issue's "2-minute version").
    fn soak_length(&self) -> u64 {
        self.soak_secs.unwrap_or(DEFAULT_SOAK_SECS)
    }
}

/// The soak's length without `--soak`, in seconds.
const DEFAULT_SOAK_SECS: u64 = 120;

/// Where the charts go, relative to the workspace root (BENCHMARKS.md links
/// them).
const CHART_DIR: &str = "bench-charts";

/// Peer workloads: (workload, sizes at full scale, sizes at quick scale).
const PEER_WORKLOADS: &[(&str, &[&str], &[&str])] = &[
    ("sequential_submit", &["5000"], &["100"]),
    ("concurrent_producers", &["64", "500"], &["8", "10"]),
    ("burn_down_c8", &["20000"], &["200"]),
    ("burn_down_c64", &["20000"], &["200"]),
    ("call_in_process", &["200"], &["10"]),
];

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--compare") {
        return compare::run(root, args);
    }
    let flags = Flags {
        quick: has("--quick"),
        peers: has("--peers"),
        record: !has("--no-record"),
        scale: has("--scale") || has("--quick"),
        standard: !has("--no-standard"),
        soak_secs: soak_secs(args)?,
        only: args.iter().position(|a| a == "--only").and_then(|at| args.get(at + 1)).cloned(),
    };
    let postgres = test_env::bench_postgres_dsn(root).ok();
    // --quick only proves the benchmarks still work (CI; nothing recorded), so
    // it reuses the debug build the tests made instead of two release builds.
    let profile = if flags.quick { "debug" } else { "release" };
    let mut build = vec!["build", "-p", "cairnq-bench", "--bin", "cairnq-bench"];
    if !flags.quick {
        build.push("--release");
    }
    cargo(root, &build)?;
    let bench = root.join("target").join(profile).join("cairnq-bench");
    let mut rows = Vec::new();
    let (mut growth, mut processes, mut soaked) = (Vec::new(), Vec::new(), Vec::new());
    let mut backends = vec![("sqlite", None)];
    if let Some(dsn) = &postgres {
        backends.push(("postgres", Some(dsn.clone())));
    }
    for (backend, dsn) in &backends {
        if flags.standard {
            for workload in list_workloads(&bench)? {
                rows.extend(run_workload(&bench, backend, dsn.as_deref(), &workload, flags.quick, &[])?);
            }
        }
        if flags.peers {
            add_peer_numbers(root, backend, dsn.as_deref(), flags.quick, &mut rows)?;
        }
        if flags.scale && flags.runs("scale") {
            growth.extend(run_workload(&bench, backend, dsn.as_deref(), "scale", flags.quick, &[])?);
        }
        if flags.scale && flags.runs("processes") {
            processes.extend(run_workload(&bench, backend, dsn.as_deref(), "processes", flags.quick, &[])?);
        }
        // The soak watches a SQLite file's WAL; one backend keeps it short.
        if *backend == "sqlite" && (flags.scale || flags.soak_secs.is_some()) && flags.runs("soak") {
            let secs = flags.soak_length().to_string();
            let extra = ["--soak-secs", secs.as_str()];
            soaked.extend(run_workload(&bench, backend, dsn.as_deref(), "soak", flags.quick, &extra)?);
        }
    }
    if postgres.is_some() && std::env::var("CAIRNQ_BENCH_PG_DSN").is_err() {
        test_env::stop_postgres(root, "pg-bench");
    }
    let micro = if flags.standard { criterion(root, flags.quick)? } else { Vec::new() };
    let stamp = today();
    let mut report = render(&stamp, &rows, &micro, &flags, postgres.is_some());
    if !growth.is_empty() {
        let curves = curves::curves(&growth);
        let charts = if flags.record { curves::write_charts(root, CHART_DIR, &curves)? } else { Vec::new() };
        let _ = writeln!(report, "\n### Growth: cost by tasks in the database (`--scale`)\n");
        report.push_str(&curves::render(&curves, &charts));
    }
    if !processes.is_empty() {
        let _ = writeln!(report, "\n### Many processes on one database\n");
        report.push_str(&plain_table(&processes));
    }
    if !soaked.is_empty() {
        let _ = writeln!(report, "\n### Soak: samples over time\n");
        // The chart's name carries the length and the run's time, so no
        // later run overwrites a chart a section links to.
        let name = format!("{}-{}", soak::length_label(flags.soak_length()), stamp.replace([':', '-'], ""));
        report.push_str(&soak::render(root, CHART_DIR, &name, &curves::curves(&soaked), flags.record)?);
    }
    println!("{report}");
    if flags.record {
        record(root, &report, summary::block(&stamp, &shell("git rev-parse --short HEAD"), &rows))?;
    }
    Ok(())
}

fn cargo(root: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo {args:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo {args:?} failed"));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn list_workloads(bench: &Path) -> Result<Vec<String>, String> {
    let output = Command::new(bench).arg("--list").output().map_err(|e| format!("cannot run cairnq-bench: {e}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect())
}

/// `--soak DURATION` (`90s`, `30m`, `2h`) in seconds.
fn soak_secs(args: &[String]) -> Result<Option<u64>, String> {
    let Some(at) = args.iter().position(|a| a == "--soak") else { return Ok(None) };
    let text = args.get(at + 1).ok_or("--soak needs a duration, e.g. 30m")?;
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = number.parse().map_err(|_| format!("--soak {text:?}: expected e.g. 90s, 30m, 2h"))?;
    match unit {
        "" | "s" => Ok(Some(n)),
        "m" => Ok(Some(n * 60)),
        "h" => Ok(Some(n * 3_600)),
        _ => Err(format!("--soak {text:?}: expected e.g. 90s, 30m, 2h")),
    }
}

/// Rows as a plain table: backend, metric, value, detail.
fn plain_table(rows: &[Row]) -> String {
    let mut s = String::from("| backend | metric | value | detail |\n|---|---|---:|---|\n");
    for r in rows {
        let _ = writeln!(s, "| {} | {} | {} | {} |", r.backend, r.metric, format_value(r.value), r.detail);
    }
    s
}

fn run_workload(
    bench: &Path,
    backend: &str,
    dsn: Option<&str>,
    workload: &str,
    quick: bool,
    extra: &[&str],
) -> Result<Vec<Row>, String> {
    eprintln!("xtask bench: {backend} {workload}");
    let mut command = Command::new(bench);
    command.args(["--backend", backend, "--workload", workload]);
    if let Some(dsn) = dsn {
        command.args(["--dsn", dsn]);
    }
    if quick {
        command.arg("--quick");
    }
    command.args(extra);
    let output = command.stderr(Stdio::inherit()).output().map_err(|e| format!("cannot run cairnq-bench: {e}"))?;
    if !output.status.success() {
        return Err(format!("workload {workload} on {backend} failed"));
    }
    Ok(parse_rows(&String::from_utf8_lossy(&output.stdout)))
}

fn add_peer_numbers(
    root: &Path,
    backend: &str,
    dsn: Option<&str>,
    quick: bool,
    rows: &mut [Row],
) -> Result<(), String> {
    let python = test_env::ensure_python_peer(root)?;
    let script = root.join("cairnq-testkit/interop/bench_peer.py");
    let scratch = root.join("target/bench-peer");
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    for (n, (workload, full, small)) in PEER_WORKLOADS.iter().enumerate() {
        let database = match dsn {
            Some(dsn) => format!("{dsn}#schema=peer_bench_{}_{n}", std::process::id()),
            None => scratch.join(format!("{workload}-{}.db", std::process::id())).display().to_string(),
        };
        eprintln!("xtask bench: python peer {backend} {workload}");
        let output = Command::new(&python)
            .arg(&script)
            .arg(workload)
            .arg(&database)
            .args(if quick { *small } else { *full })
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run the Python peer: {e}"))?;
        for peer in parse_rows(&String::from_utf8_lossy(&output.stdout)) {
            if let Some(row) =
                rows.iter_mut().find(|r| r.backend == backend && r.workload == peer.workload && r.metric == peer.metric)
            {
                row.python = Some(peer.value);
            }
        }
    }
    Ok(())
}

/// Runs the criterion benches; returns (name, median time) pairs. With
/// `quick`, criterion's test mode runs each benchmark once on the debug build.
fn criterion(root: &Path, quick: bool) -> Result<Vec<(String, String)>, String> {
    if quick {
        cargo(root, &["test", "-p", "cairnq-bench", "--bench", "seam"])?;
        return Ok(Vec::new());
    }
    let args = ["bench", "-p", "cairnq-bench", "--bench", "seam", "--", "--noplot", "--warm-up-time", "1"];
    let output = cargo(root, &[&args[..], &["--measurement-time", "3"]].concat())?;
    let mut out = Vec::new();
    let mut last_name = String::new();
    for line in output.lines() {
        let trimmed = line.trim();
        if let Some((name, rest)) = trimmed.split_once("time:") {
            let name = if name.trim().is_empty() { last_name.clone() } else { name.trim().to_string() };
            let middle = rest.trim().trim_matches(|c| c == '[' || c == ']').split_whitespace().collect::<Vec<_>>();
            if middle.len() >= 4 {
                out.push((name, format!("{} {}", middle[2], middle[3])));
            }
        } else if !trimmed.is_empty() && !trimmed.contains(' ') {
            last_name = trimmed.to_string();
        }
    }
    Ok(out)
}

fn render(stamp: &str, rows: &[Row], micro: &[(String, String)], flags: &Flags, postgres: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## {} — `cargo xtask bench{}{}{}{}{}{}`\n",
        stamp,
        if flags.quick { " --quick" } else { "" },
        if flags.peers { " --peers" } else { "" },
        if flags.scale && !flags.quick { " --scale" } else { "" },
        if flags.standard { "" } else { " --no-standard" },
        flags.only.as_ref().map(|o| format!(" --only {o}")).unwrap_or_default(),
        flags.soak_secs.map(|s| format!(" --soak {}", soak::length_label(s))).unwrap_or_default(),
    );
    let _ = writeln!(s, "{}\n", machine_facts());
    let _ = writeln!(
        s,
        "Settings: {}; SQLite temp files at default durability (WAL + synchronous FULL); {}; one process per workload.\n",
        if flags.quick { "debug build, smallest sizes (a smoke run, not a measurement)" } else { "release build" },
        if postgres {
            "Postgres 15: a throwaway local cluster of its own with fsync on"
        } else {
            "Postgres: no server at hand, not measured"
        }
    );
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "| backend | workload | metric | Rust | Python 0.15.1 | Rust / Python | sizes |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---|");
    for r in rows {
        let (python, ratio) = match r.python {
            Some(p) if r.metric.ends_with("_ms") => {
                (format!("{p:.2}"), format!("{:.1}x faster", p / r.value.max(1e-9)))
            }
            Some(p) => (format!("{p:.0}"), format!("{:.1}x", r.value / p.max(1e-9))),
            None => ("".into(), "".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {python} | {ratio} | {} |",
            r.backend,
            r.workload,
            r.metric,
            format_value(r.value),
            r.detail
        );
    }
    s.push_str(&floors::render(rows));
    if micro.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\nCriterion, through the seam (median per iteration):\n");
    let _ = writeln!(s, "| benchmark | time |\n|---|---:|");
    for (name, time) in micro {
        let _ = writeln!(s, "| {name} | {time} |");
    }
    s
}

fn format_value(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

fn today() -> String {
    shell("date -u +%Y-%m-%dT%H:%MZ")
}

fn machine_facts() -> String {
    format!(
        "Machine: {} cores ({}), {} memory, kernel {}, {}, commit {}.",
        shell("nproc"),
        shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs"),
        shell("free -h | awk '/Mem:/ {print $2}'"),
        shell("uname -r"),
        shell("rustc --version"),
        shell("git rev-parse --short HEAD"),
    )
}

fn shell(command: &str) -> String {
    Command::new("sh")
        .args(["-c", command])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Appends the run's section to BENCHMARKS.md and, when the run measured
/// headline workloads, refreshes the summary's generated block with them.
fn record(root: &Path, report: &str, latest: Option<String>) -> Result<(), String> {
    let path = root.join("BENCHMARKS.md");
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Benchmarks\n\n".to_string());
    if let Some(block) = latest {
        text = summary::refresh(&text, &block);
    }
    text.push('\n');
    text.push_str(report);
    std::fs::write(&path, text).map_err(|e| format!("cannot write BENCHMARKS.md: {e}"))
}
