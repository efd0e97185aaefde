//! The part of BENCHMARKS.md's summary that `cargo xtask bench` keeps
//! current: when a run is recorded, the block between [`BEGIN`] and
//! [`END`] is rewritten with that run's headline throughputs per backend
//! (and the Python SDK's, with `--peers`), its date and commit. The rest of
//! the summary (targets, verdicts, figures from special runs) is curated by
//! hand, because a verdict needs a quiet machine and a reason.

use std::fmt::Write as _;

use super::rows::Row;

/// Where the generated block starts; it is put right after
/// [`ANCHOR`] the first time.
pub(crate) const BEGIN: &str = "<!-- latest-run: begin (cargo xtask bench rewrites this block) -->";
/// Where the generated block ends.
pub(crate) const END: &str = "<!-- latest-run: end -->";
/// The summary's opening line (the book includes the summary from here).
const ANCHOR: &str = "<!-- ANCHOR: summary -->";

/// The headline workloads: (workload, what the table calls it).
const HEADLINES: &[(&str, &str)] = &[
    ("burn_down_c8", "burn-down, concurrency 8"),
    ("burn_down_c64", "burn-down, concurrency 64"),
    ("concurrent_producers", "concurrent producers"),
    ("sequential_submit", "one submit at a time"),
    ("submit_many", "`submit_many`"),
];

/// The generated block for a run's rows, or `None` when the run measured
/// none of the headline workloads (a `--scale` or `--only` run).
pub(crate) fn block(stamp: &str, commit: &str, rows: &[Row]) -> Option<String> {
    let rate = |workload: &str, backend: &str| {
        rows.iter().find(|r| r.workload == workload && r.backend == backend && r.metric == "tasks_per_s")
    };
    if !HEADLINES.iter().any(|(w, _)| rate(w, "sqlite").is_some() || rate(w, "postgres").is_some()) {
        return None;
    }
    let cell = |row: Option<&Row>| row.map_or("-".to_string(), |r| format!("{:.0}/s", r.value));
    let python = |row: Option<&Row>| row.and_then(|r| r.python).map_or("-".to_string(), |p| format!("{p:.0}/s"));
    let mut out = format!(
        "{BEGIN}\n**Latest recorded run** ({stamp}, commit {commit}; tasks/s, Python SDK 0.15.1 where the run had `--peers`):\n\n"
    );
    out.push_str("| workload | SQLite | Postgres | Python: SQLite / Postgres |\n|---|---:|---:|---:|\n");
    for (workload, label) in HEADLINES {
        let (sqlite, postgres) = (rate(workload, "sqlite"), rate(workload, "postgres"));
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} / {} |",
            cell(sqlite),
            cell(postgres),
            python(sqlite),
            python(postgres)
        );
    }
    out.push_str(END);
    Some(out)
}

/// `text` with its generated block replaced by `block` (or inserted after
/// the summary's anchor, or at the top when there is no anchor either).
pub(crate) fn refresh(text: &str, block: &str) -> String {
    if let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END))
        && start < end
    {
        return format!("{}{block}{}", &text[..start], &text[end + END.len()..]);
    }
    match text.find(ANCHOR) {
        Some(at) => {
            let after = at + ANCHOR.len();
            format!("{}\n{block}\n{}", &text[..after], &text[after..])
        }
        None => format!("{block}\n\n{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(workload: &str, backend: &str, value: f64) -> Row {
        Row {
            workload: workload.into(),
            backend: backend.into(),
            metric: "tasks_per_s".into(),
            value,
            detail: String::new(),
            python: None,
        }
    }

    #[test]
    fn the_block_is_inserted_once_and_then_replaced() {
        let page = format!("# Benchmarks\n\n{ANCHOR}\n| hand | made |\n");
        let first = block("2026-12-04", "abc1234", &[row("burn_down_c8", "sqlite", 20_000.4)]).expect("a headline");
        let once = refresh(&page, &first);
        assert!(once.contains("| burn-down, concurrency 8 | 20000/s | - | - / - |"), "{once}");
        assert!(once.contains("| hand | made |"), "the curated rows stay");
        let second = block("2026-12-05", "def5678", &[row("burn_down_c8", "postgres", 9_000.0)]).expect("a headline");
        let twice = refresh(&once, &second);
        assert_eq!(twice.matches(BEGIN).count(), 1, "{twice}");
        assert!(twice.contains("def5678") && !twice.contains("abc1234"), "{twice}");
        assert!(twice.contains("| burn-down, concurrency 8 | - | 9000/s | - / - |"), "{twice}");
    }

    #[test]
    fn a_run_without_headlines_leaves_the_summary_alone() {
        assert!(block("2026-12-04", "abc1234", &[row("scale", "sqlite", 1.0)]).is_none());
    }
}
