//! `cargo xtask bench --compare REV`: the step before claiming a hot-path
//! change. Builds the bench program at REV (a git worktree under
//! `target/compare/`) and at the working tree, then runs the chosen
//! workloads interleaved (A, B, A, B, ...) on one machine, so drift in the
//! machine's load falls on both sides alike, and prints each side's median
//! and the median of the pair ratios (B / A per round). The comparison is
//! appended to BENCHMARKS.md unless `--no-record`.
//!
//! Absolute numbers differ between machines and hours; only a comparison run
//! interleaved on one machine says whether a change made the engine faster.
//!
//! ```text
//! cargo xtask bench --compare b1925ac [--rounds 3] [--workloads burn_down_c8,burn_down_c64]
//!                   [--backends sqlite,postgres] [--quick] [--no-record]
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::rows::Row;
use super::{cargo, format_value, machine_facts, record, run_workload, today};
use crate::test_env;

/// The workloads compared when `--workloads` is not given: the throughput
/// headliners (the ones a hot-path change moves first).
const DEFAULT_WORKLOADS: &[&str] = &["burn_down_c8", "burn_down_c64", "concurrent_producers"];

/// Rounds when `--rounds` is not given: the fewest that give a median of pairs.
const DEFAULT_ROUNDS: usize = 3;

/// What `--compare` was asked to do.
struct CompareArgs {
    rev: String,
    rounds: usize,
    workloads: Vec<String>,
    backends: Vec<String>,
    quick: bool,
    record: bool,
}

fn flag_value<'a>(args: &'a [String], flag: &str) -> Result<Option<&'a str>, String> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(at) => args.get(at + 1).map(|v| Some(v.as_str())).ok_or_else(|| format!("{flag} needs a value")),
    }
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn parse(args: &[String]) -> Result<CompareArgs, String> {
    let rev = flag_value(args, "--compare")?.ok_or("--compare needs a revision")?.to_string();
    let rounds = match flag_value(args, "--rounds")? {
        None => DEFAULT_ROUNDS,
        Some(n) => n.parse().ok().filter(|n| *n >= 1).ok_or_else(|| format!("--rounds {n:?}: expected 1 or more"))?,
    };
    let workloads = flag_value(args, "--workloads")?
        .map(list)
        .unwrap_or_else(|| DEFAULT_WORKLOADS.iter().map(|w| w.to_string()).collect());
    let backends =
        flag_value(args, "--backends")?.map(list).unwrap_or_else(|| vec!["sqlite".into(), "postgres".into()]);
    if let Some(bad) = backends.iter().find(|b| !matches!(b.as_str(), "sqlite" | "postgres")) {
        return Err(format!("--backends: unknown backend {bad:?} (sqlite, postgres)"));
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    Ok(CompareArgs { rev, rounds, workloads, backends, quick: has("--quick"), record: !has("--no-record") })
}

/// One side of the comparison: a label and its bench binary.
struct Side {
    label: String,
    bench: PathBuf,
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let args = parse(args)?;
    let base = build_at(root, &args.rev, args.quick)?;
    let head = build_working_tree(root, args.quick)?;
    let postgres =
        if args.backends.iter().any(|b| b == "postgres") { Some(test_env::bench_postgres_dsn(root)?) } else { None };
    let mut samples: Vec<Sample> = Vec::new();
    for round in 1..=args.rounds {
        for backend in &args.backends {
            let dsn = if backend == "postgres" { postgres.as_deref() } else { None };
            for workload in &args.workloads {
                for (side, bench) in [(0, &base), (1, &head)] {
                    eprintln!(
                        "xtask bench --compare: round {round}/{} {} {backend} {workload}",
                        args.rounds, bench.label
                    );
                    let rows = run_workload(&bench.bench, backend, dsn, workload, args.quick, &[])?;
                    samples.extend(rows.into_iter().map(|row| Sample { side, round, row }));
                }
            }
        }
    }
    if postgres.is_some() && std::env::var("CAIRNQ_BENCH_PG_DSN").is_err() {
        test_env::stop_postgres(root, "pg-bench");
    }
    let report = render(&args, &base, &head, &samples);
    println!("{report}");
    if args.record {
        record(root, &report, None)?;
    }
    Ok(())
}

/// The bench built from REV in a worktree of its own, its binary copied out so
/// the next build cannot replace it mid-run.
fn build_at(root: &Path, rev: &str, quick: bool) -> Result<Side, String> {
    let sha = git(root, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    let short = git(root, &["rev-parse", "--short", &sha])?;
    let dir = root.join("target/compare");
    let tree = dir.join(format!("tree-{short}"));
    if !tree.join("Cargo.toml").exists() {
        let _ = git(root, &["worktree", "prune"]);
        git(root, &["worktree", "add", "--detach", "--force", &tree.display().to_string(), &sha])?;
    }
    // A target directory per revision: cargo leaves a path crate's
    // directory out of its artifact hash, so two revisions sharing one
    // would take each other's build-script output (cairnq-protocol's
    // generated statements) for fresh.
    let target = dir.join(format!("target-{short}"));
    let bench = build_bench(&tree, Some(&target), quick)?;
    Ok(Side { label: short.clone(), bench: keep_copy(&bench, &dir, &short)? })
}

fn build_working_tree(root: &Path, quick: bool) -> Result<Side, String> {
    let head = git(root, &["rev-parse", "--short", "HEAD"])?;
    let dirty = !git(root, &["status", "--porcelain", "--untracked-files=no"])?.is_empty();
    let label = if dirty { format!("{head}+changes") } else { head };
    let bench = build_bench(root, None, quick)?;
    let dir = root.join("target/compare");
    Ok(Side { label, bench: keep_copy(&bench, &dir, "working-tree")? })
}

/// Builds `cairnq-bench` (whichever crate of the tree holds it) and returns
/// the binary's path.
fn build_bench(tree: &Path, target: Option<&Path>, quick: bool) -> Result<PathBuf, String> {
    let mut build = vec!["build", "--bin", "cairnq-bench"];
    if !quick {
        build.push("--release");
    }
    let target_arg;
    if let Some(target) = target {
        target_arg = target.display().to_string();
        build.extend(["--target-dir", target_arg.as_str()]);
    }
    cargo(tree, &build)?;
    let profile = if quick { "debug" } else { "release" };
    Ok(target.map(Path::to_path_buf).unwrap_or_else(|| tree.join("target")).join(profile).join("cairnq-bench"))
}

fn keep_copy(bench: &Path, dir: &Path, name: &str) -> Result<PathBuf, String> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let copy = bin.join(format!("cairnq-bench-{name}"));
    std::fs::copy(bench, &copy).map_err(|e| format!("cannot copy {}: {e}", bench.display()))?;
    Ok(copy)
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let output =
        Command::new("git").current_dir(root).args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// One measurement of one side in one round.
struct Sample {
    /// 0 = A (the revision), 1 = B (the working tree).
    side: usize,
    round: usize,
    row: Row,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The comparison of one (backend, workload, metric) across the rounds.
struct Compared {
    key: (String, String, String),
    a: Vec<f64>,
    b: Vec<f64>,
    /// B / A of each round where both sides measured.
    ratios: Vec<f64>,
}

fn compare(samples: &[Sample]) -> Vec<Compared> {
    let mut out: Vec<Compared> = Vec::new();
    for s in samples {
        let key = (s.row.backend.clone(), s.row.workload.clone(), s.row.metric.clone());
        let at = match out.iter().position(|c| c.key == key) {
            Some(at) => at,
            None => {
                out.push(Compared { key: key.clone(), a: Vec::new(), b: Vec::new(), ratios: Vec::new() });
                out.len() - 1
            }
        };
        let entry = &mut out[at];
        if s.side == 0 {
            entry.a.push(s.row.value)
        } else {
            entry.b.push(s.row.value)
        }
        if s.side == 1 {
            let partner = samples.iter().find(|p| {
                p.side == 0
                    && p.round == s.round
                    && (&p.row.backend, &p.row.workload, &p.row.metric) == (&key.0, &key.1, &key.2)
            });
            if let Some(a) = partner.filter(|a| a.row.value > 0.0) {
                entry.ratios.push(s.row.value / a.row.value);
            }
        }
    }
    out
}

fn render(args: &CompareArgs, base: &Side, head: &Side, samples: &[Sample]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## {} — `cargo xtask bench --compare {}` ({} rounds, interleaved A, B)\n",
        today(),
        args.rev,
        args.rounds
    );
    let _ = writeln!(s, "{}\n", machine_facts());
    let _ = writeln!(
        s,
        "A = {}, B = {}; {}; each cell is the median over the rounds; B/A is the median of the per-round ratios (above 1 means B is faster for throughput metrics, slower for `_ms` metrics).\n",
        base.label,
        head.label,
        if args.quick { "debug build, smallest sizes (a smoke run, not a measurement)" } else { "release build" }
    );
    let _ = writeln!(s, "| backend | workload | metric | A median | B median | B/A | per round B/A |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---|");
    for c in compare(samples) {
        let cell = |v: Option<f64>| v.map(format_value).unwrap_or_else(|| "-".into());
        let per_round = c.ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {per_round} |",
            c.key.0,
            c.key.1,
            c.key.2,
            cell(median(c.a)),
            cell(median(c.b)),
            median(c.ratios).map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into()),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    //! The arithmetic of the comparison: medians and pairing by round.

    use super::*;

    fn sample(side: usize, round: usize, value: f64) -> Sample {
        let row = Row {
            workload: "burn_down_c8".into(),
            backend: "sqlite".into(),
            metric: "tasks_per_s".into(),
            value,
            detail: String::new(),
            python: None,
        };
        Sample { side, round, row }
    }

    #[test]
    fn medians_are_of_the_middle_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
    }

    #[test]
    fn ratios_pair_the_sides_of_one_round() {
        let samples = [sample(0, 1, 100.0), sample(1, 1, 110.0), sample(0, 2, 200.0), sample(1, 2, 180.0)];
        let compared = compare(&samples);
        assert_eq!(compared.len(), 1);
        let ratios: Vec<String> = compared[0].ratios.iter().map(|r| format!("{r:.2}")).collect();
        assert_eq!(ratios, ["1.10", "0.90"]);
        assert_eq!(median(compared[0].a.clone()), Some(150.0));
    }

    #[test]
    fn arguments_are_checked() {
        let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert!(parse(&args("--compare")).is_err());
        assert!(parse(&args("--compare HEAD --rounds 0")).is_err());
        assert!(parse(&args("--compare HEAD --backends mysql")).is_err());
        let parsed = parse(&args("--compare HEAD~1 --rounds 5 --workloads a,b --backends sqlite")).expect("valid");
        assert_eq!((parsed.rev.as_str(), parsed.rounds), ("HEAD~1", 5));
        assert_eq!(parsed.workloads, ["a", "b"]);
        assert_eq!(parsed.backends, ["sqlite"]);
    }
}
