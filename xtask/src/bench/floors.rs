//! The engine as a share of its floor: each engine workload of a run beside
//! the floor workload that runs the same statements with nothing around
//! them (`cairnq-bench`'s `floors`), per backend, as the ratio engine /
//! floor. Both sides come from the same run, workload after workload, so a
//! loaded machine weighs on both alike: the ratio is what counts, not the
//! absolute numbers.

use std::fmt::Write as _;

use super::format_value;
use super::rows::Row;

/// (engine workload, engine metric, floor workload, floor metric, what the
/// floor does).
const PAIRS: &[(&str, &str, &str, &str, &str)] = &[
    ("burn_down_c8", "tasks_per_s", "raw_burn_down", "c8_tasks_per_s", "claim and complete, each committed on its own"),
    (
        "burn_down_c8",
        "tasks_per_s",
        "raw_burn_down",
        "c8_one_commit_tasks_per_s",
        "completions sharing the next claim's commit",
    ),
    (
        "burn_down_c64",
        "tasks_per_s",
        "raw_burn_down",
        "c64_tasks_per_s",
        "claim and complete, each committed on its own",
    ),
    (
        "burn_down_c64",
        "tasks_per_s",
        "raw_burn_down",
        "c64_one_commit_tasks_per_s",
        "completions sharing the next claim's commit",
    ),
    ("sequential_submit", "tasks_per_s", "raw_submit", "one_per_commit_tasks_per_s", "one task per commit"),
    ("concurrent_producers", "tasks_per_s", "raw_submit", "grouped_tasks_per_s", "one commit per producer count"),
    ("submit_many", "tasks_per_s", "raw_multi_row_insert", "tasks_per_s", "multi-row insert, one commit"),
];

fn value(rows: &[Row], backend: &str, workload: &str, metric: &str) -> Option<f64> {
    rows.iter().find(|r| r.backend == backend && r.workload == workload && r.metric == metric).map(|r| r.value)
}

/// The engine / floor table of `rows` (empty when the run has no floors).
pub(crate) fn render(rows: &[Row]) -> String {
    let mut backends: Vec<&str> = Vec::new();
    for r in rows {
        if !backends.contains(&r.backend.as_str()) {
            backends.push(&r.backend);
        }
    }
    let mut lines = Vec::new();
    for (engine, engine_metric, floor, floor_metric, how) in PAIRS {
        let cells: Vec<String> = backends
            .iter()
            .map(|b| match (value(rows, b, engine, engine_metric), value(rows, b, floor, floor_metric)) {
                (Some(e), Some(f)) => format!("{} / {} = **{:.2}**", format_value(e), format_value(f), e / f.max(1e-9)),
                _ => String::new(),
            })
            .collect();
        if cells.iter().any(|c| !c.is_empty()) {
            lines.push(format!("| {engine} | {floor} `{floor_metric}` ({how}) | {} |", cells.join(" | ")));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nEngine / floor (the floor runs the engine's statements at its batch sizes straight through the \
         driver, in the same run; tasks/s):\n\n",
    );
    let _ = writeln!(s, "| engine workload | floor | {} |", backends.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---:|".repeat(backends.len()));
    for line in lines {
        let _ = writeln!(s, "{line}");
    }
    s
}

#[cfg(test)]
mod tests {
    //! Engine and floor rows pair by backend, workload and metric.

    use super::*;

    fn row(backend: &str, workload: &str, metric: &str, value: f64) -> Row {
        Row {
            workload: workload.into(),
            backend: backend.into(),
            metric: metric.into(),
            value,
            detail: String::new(),
            python: None,
        }
    }

    #[test]
    fn the_engine_is_shown_as_a_share_of_its_floor_per_backend() {
        let rows = [
            row("sqlite", "burn_down_c8", "tasks_per_s", 15_000.0),
            row("sqlite", "raw_burn_down", "c8_tasks_per_s", 20_000.0),
            row("postgres", "burn_down_c8", "tasks_per_s", 9_000.0),
            row("postgres", "raw_burn_down", "c8_tasks_per_s", 10_000.0),
        ];
        let table = render(&rows);
        assert!(table.contains("| sqlite | postgres |"), "{table}");
        assert!(table.contains("15000 / 20000 = **0.75** | 9000 / 10000 = **0.90** |"), "{table}");
        assert!(!table.contains("submit_many"), "pairs without numbers are left out: {table}");
        assert_eq!(render(&rows[..1]), "", "no floor, no table");
    }
}
