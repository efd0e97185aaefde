//! The soak's samples (`metric@seconds` points) as a table and a chart per
//! backend, with a verdict on growth: the mean of the last third of the
//! run against the mean of the middle third (the first third is warm-up:
//! the retention window filling, caches and pools growing to their size).

use std::fmt::Write as _;
use std::path::Path;

use super::chart::{self, Axes, Series};
use super::curves::{Curve, format_value, write_svg};

/// Growth from the middle third to the last third that still reads as
/// bounded (noise on a shared machine is larger than that).
const BOUNDED: f64 = 1.25;

/// Metrics that may be near zero, where a ratio says nothing: below these
/// absolute values they are bounded whatever their ratio.
const FLOORS: &[(&str, f64)] = &[("wal_mb", 8.0), ("p99_submit_to_start_ms", 50.0), ("open_fds", 64.0)];

fn mean(points: &[(usize, f64)]) -> f64 {
    points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64
}

/// (middle-third mean, last-third mean, verdict) of one curve.
fn verdict(curve: &Curve) -> (f64, f64, &'static str) {
    let n = curve.points.len();
    let third = (n / 3).max(1);
    let middle = mean(&curve.points[third.min(n)..(2 * third).min(n)]);
    let last = mean(&curve.points[(2 * third).min(n.saturating_sub(1))..]);
    let floor = FLOORS.iter().find(|(m, _)| *m == curve.metric).map_or(0.0, |(_, f)| *f);
    let bounded = last <= middle * BOUNDED || last <= floor;
    (middle, last, if bounded { "bounded" } else { "**grows**" })
}

/// A soak length as a file name and a flag take it: `30m`, `2h`, `90s`.
pub(crate) fn length_label(secs: u64) -> String {
    match secs {
        s if s > 0 && s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The table and chart links of the soak curves; charts written when
/// `record`, named by backend and `name`, the soak's length and the run's
/// time (`soak-sqlite-30m-20261202T0241Z.svg`).
pub(crate) fn render(root: &Path, dir: &str, name: &str, curves: &[Curve], record: bool) -> Result<String, String> {
    let mut s = String::new();
    let _ = writeln!(s, "| backend | metric | first | max | middle third | last third | verdict |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---|");
    for c in curves {
        let first = c.points.first().map_or(0.0, |p| p.1);
        let max = c.points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let (middle, last, verdict) = verdict(c);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {verdict} |",
            c.backend,
            c.metric,
            format_value(first),
            format_value(max),
            format_value(middle),
            format_value(last)
        );
    }
    if record {
        let mut backends: Vec<&str> = curves.iter().map(|c| c.backend.as_str()).collect();
        backends.dedup();
        for backend in backends {
            let series: Vec<Series> = curves
                .iter()
                .filter(|c| c.backend == backend)
                .map(|c| {
                    let max = c.points.iter().map(|p| p.1).fold(1e-12, f64::max);
                    let label = format!("{} (max {})", c.metric, format_value(max));
                    Series { label, points: c.points.iter().map(|p| (p.0 as f64, p.1 / max)).collect() }
                })
                .collect();
            let length = name.split('-').next().unwrap_or(name);
            let title = format!("{backend} soak ({length}): each sample / the metric's maximum");
            let axes = Axes { title: &title, x_label: "seconds", y_label: "of max", log_x: false, log_y: false };
            let file = format!("{dir}/soak-{backend}-{name}.svg");
            write_svg(root, &file, &chart::svg(&axes, &series))?;
            let _ = writeln!(s, "\n![{backend} soak, {length}]({file})");
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    //! A plateau is bounded; a steady climb is not.

    use super::*;

    fn curve(metric: &str, values: &[f64]) -> Curve {
        Curve {
            backend: "sqlite".into(),
            metric: metric.into(),
            points: values.iter().enumerate().map(|(i, v)| (i * 10, *v)).collect(),
        }
    }

    #[test]
    fn chart_names_carry_the_soak_length() {
        assert_eq!(length_label(1_800), "30m");
        assert_eq!(length_label(120), "2m");
        assert_eq!(length_label(7_200), "2h");
        assert_eq!(length_label(90), "90s");
        assert_eq!(length_label(0), "0s");
    }

    #[test]
    fn plateaus_are_bounded_and_climbs_grow() {
        assert_eq!(verdict(&curve("rss_mb", &[10.0, 30.0, 31.0, 30.5, 31.0, 30.8])).2, "bounded");
        assert_eq!(verdict(&curve("rss_mb", &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0])).2, "**grows**");
        assert_eq!(verdict(&curve("wal_mb", &[0.1, 0.2, 0.4, 1.0, 2.0, 4.0])).2, "bounded");
    }
}
