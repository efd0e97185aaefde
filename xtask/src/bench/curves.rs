//! `--scale`: the growth workload's `metric@size` points turned into one
//! curve per backend and metric, the ratio of the largest size to the
//! smallest, a verdict against the targets, and a chart of every
//! curve relative to its smallest size (flat lines are flat costs).

use std::fmt::Write as _;
use std::path::Path;

use super::chart::{self, Axes, Series};
use super::rows::Row;

/// How far a cost may grow from the smallest size to the largest (issue
/// 17's targets); metrics not named here are recorded without one.
const TARGETS: &[(&str, f64)] = &[
    ("stats_ms", 3.0),
    ("stats_queue_ms", 3.0),
    ("queue_depth_ms", 3.0),
    ("claim_one_ms", 1.5),
    ("submit_ms", 1.5),
    ("list_first_page_ms", 2.0),
    ("list_deep_page_ms", 2.0),
];

/// One metric on one backend across the sizes.
pub(crate) struct Curve {
    pub(crate) backend: String,
    pub(crate) metric: String,
    pub(crate) points: Vec<(usize, f64)>,
}

impl Curve {
    fn ratio(&self) -> Option<f64> {
        let (first, last) = (self.points.first()?, self.points.last()?);
        (self.points.len() > 1).then(|| last.1 / first.1.max(1e-12))
    }

    /// Smaller is better for times and sizes, larger for rates.
    fn growth(&self) -> Option<f64> {
        let ratio = self.ratio()?;
        Some(if self.metric.ends_with("_per_s") { 1.0 / ratio.max(1e-12) } else { ratio })
    }

    fn verdict(&self) -> String {
        let target = TARGETS.iter().find(|(m, _)| *m == self.metric).map(|(_, t)| *t);
        match (target, self.growth()) {
            (Some(target), Some(growth)) if growth <= target => format!("met (≤ {target}x)"),
            (Some(target), Some(_)) => format!("**missed** (≤ {target}x)"),
            _ => "—".to_string(),
        }
    }
}

/// The `metric@size` rows grouped into curves, sizes ascending.
pub(crate) fn curves(rows: &[Row]) -> Vec<Curve> {
    let mut out: Vec<Curve> = Vec::new();
    for row in rows {
        let Some((metric, size)) = row.metric.split_once('@') else { continue };
        let Ok(size) = size.parse::<usize>() else { continue };
        match out.iter_mut().find(|c| c.backend == row.backend && c.metric == metric) {
            Some(curve) => curve.points.push((size, row.value)),
            None => out.push(Curve {
                backend: row.backend.clone(),
                metric: metric.to_string(),
                points: vec![(size, row.value)],
            }),
        }
    }
    for curve in &mut out {
        curve.points.sort_by_key(|p| p.0);
    }
    out
}

/// The markdown table of the curves (and a link to each backend's chart).
pub(crate) fn render(curves: &[Curve], charts: &[(String, String)]) -> String {
    let mut s = String::new();
    let sizes: Vec<usize> = curves.first().map(|c| c.points.iter().map(|p| p.0).collect()).unwrap_or_default();
    let header: Vec<String> = sizes.iter().map(|n| format!("{n} tasks")).collect();
    let _ = writeln!(s, "| backend | metric | {} | largest / smallest | target |", header.join(" | "));
    let _ = writeln!(s, "|---|---|{}---:|---|", "---:|".repeat(sizes.len()));
    for c in curves {
        let values: Vec<String> = c.points.iter().map(|p| format_value(p.1)).collect();
        let ratio = c.ratio().map(|r| format!("{r:.2}x")).unwrap_or_default();
        let _ = writeln!(s, "| {} | {} | {} | {ratio} | {} |", c.backend, c.metric, values.join(" | "), c.verdict());
    }
    for (backend, file) in charts {
        let _ = writeln!(s, "\n![{backend}: cost relative to the smallest size]({file})");
    }
    s
}

/// Writes one chart per backend under `dir` (each curve divided by its
/// value at the smallest size, so the targets read off the y axis); returns
/// (backend, path relative to the workspace root).
pub(crate) fn write_charts(root: &Path, dir: &str, curves: &[Curve]) -> Result<Vec<(String, String)>, String> {
    let mut backends: Vec<&str> = curves.iter().map(|c| c.backend.as_str()).collect();
    backends.dedup();
    std::fs::create_dir_all(root.join(dir)).map_err(|e| format!("cannot create {dir}: {e}"))?;
    let mut written = Vec::new();
    for backend in backends {
        let series: Vec<Series> = curves
            .iter()
            .filter(|c| c.backend == backend && !c.metric.ends_with("_per_s") && c.metric != "bytes_per_task")
            .map(|c| {
                let base = c.points.first().map_or(1.0, |p| p.1.max(1e-12));
                Series { label: c.metric.clone(), points: c.points.iter().map(|p| (p.0 as f64, p.1 / base)).collect() }
            })
            .collect();
        let title = format!("{backend}: cost at each size / cost at the smallest size");
        let axes =
            Axes { title: &title, x_label: "tasks in the database", y_label: "x smallest", log_x: true, log_y: true };
        let file = format!("{dir}/scale-{backend}.svg");
        std::fs::write(root.join(&file), chart::svg(&axes, &series))
            .map_err(|e| format!("cannot write {file}: {e}"))?;
        written.push((backend.to_string(), file));
    }
    Ok(written)
}

/// Writes `svg` to `file` under the workspace root.
pub(crate) fn write_svg(root: &Path, file: &str, svg: &str) -> Result<(), String> {
    std::fs::write(root.join(file), svg).map_err(|e| format!("cannot write {file}: {e}"))
}

pub(crate) fn format_value(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.3}") }
}

#[cfg(test)]
mod tests {
    //! Points group into curves, and the verdict reads the right direction.

    use super::*;

    fn row(metric: &str, value: f64) -> Row {
        Row {
            workload: "scale".into(),
            backend: "sqlite".into(),
            metric: metric.into(),
            value,
            detail: String::new(),
            python: None,
        }
    }

    #[test]
    fn points_become_curves_with_ratios_and_verdicts() {
        let rows = vec![
            row("stats_ms@100000", 0.2),
            row("stats_ms@10000", 0.1),
            row("claim_one_ms@10000", 1.0),
            row("claim_one_ms@100000", 2.0),
            row("purge_rows_per_s@10000", 1000.0),
            row("purge_rows_per_s@100000", 500.0),
            row("burn_down", 1.0),
        ];
        let curves = curves(&rows);
        assert_eq!(curves.len(), 3);
        assert_eq!(curves[0].points, vec![(10_000, 0.1), (100_000, 0.2)]);
        assert!(curves[0].verdict().starts_with("met"));
        assert!(curves[1].verdict().contains("missed"));
        assert_eq!(curves[2].growth(), Some(2.0));
        let table = render(&curves, &[]);
        assert!(table.contains("| sqlite | stats_ms | 0.100 | 0.200 | 2.00x | met (≤ 3x) |"), "{table}");
    }
}
