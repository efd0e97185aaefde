//! Line charts as SVG text, drawn by hand (the xtask has no dependencies):
//! enough for a bench to show how its numbers move, which a table of
//! numbers hides.

use std::fmt::Write as _;

/// One line of a chart.
pub(crate) struct Series {
    pub(crate) label: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// What the axes say and how they scale.
pub(crate) struct Axes<'a> {
    pub(crate) title: &'a str,
    pub(crate) x_label: &'a str,
    pub(crate) y_label: &'a str,
    pub(crate) log_x: bool,
    pub(crate) log_y: bool,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#393b79", "#637939",
];

/// The chart of `series` on `axes`, as a standalone SVG document.
pub(crate) fn svg(axes: &Axes<'_>, series: &[Series]) -> String {
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().copied()).collect();
    let scale_x = Scale::fit(all.iter().map(|p| p.0), axes.log_x, LEFT, WIDTH - RIGHT);
    let scale_y = Scale::fit(all.iter().map(|p| p.1), axes.log_y, HEIGHT - BOTTOM, TOP);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{LEFT}" y="22" font-size="15">{}</text>"#, escape(axes.title));
    for (value, at) in scale_x.ticks() {
        let _ = writeln!(
            s,
            r##"<line x1="{at:.1}" y1="{TOP}" x2="{at:.1}" y2="{:.1}" stroke="#ddd"/><text x="{at:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 16.0,
            label(value)
        );
    }
    for (value, at) in scale_y.ticks() {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            at + 4.0,
            label(value)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 12.0,
        escape(axes.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (TOP + HEIGHT - BOTTOM) / 2.0,
        (TOP + HEIGHT - BOTTOM) / 2.0,
        escape(axes.y_label)
    );
    for (i, line) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<String> =
            line.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", scale_x.at(x), scale_y.at(y))).collect();
        let _ =
            writeln!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, points.join(" "));
        let y = TOP + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            WIDTH - RIGHT + 12.0,
            WIDTH - RIGHT + 32.0,
            WIDTH - RIGHT + 38.0,
            y + 4.0,
            escape(&line.label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A linear or logarithmic map from data to pixels.
struct Scale {
    low: f64,
    high: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Scale {
    fn fit(values: impl Iterator<Item = f64>, log: bool, from: f64, to: f64) -> Self {
        let values: Vec<f64> = values.filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut low, mut high) = if min.is_finite() { (min, max) } else { (1.0, 10.0) };
        if log {
            low = 10f64.powf(low.log10().floor());
            high = 10f64.powf(high.log10().ceil());
            if high <= low {
                high = low * 10.0;
            }
        } else {
            low = low.min(0.0);
            if high <= low {
                high = low + 1.0;
            }
        }
        Self { low, high, log, from, to }
    }

    fn at(&self, value: f64) -> f64 {
        let t = if self.log {
            (value.max(self.low).log10() - self.low.log10()) / (self.high.log10() - self.low.log10())
        } else {
            (value - self.low) / (self.high - self.low)
        };
        self.from + t * (self.to - self.from)
    }

    /// Decades on a log scale, five steps on a linear one.
    fn ticks(&self) -> Vec<(f64, f64)> {
        let values: Vec<f64> = if self.log {
            let (a, b) = (self.low.log10().round() as i32, self.high.log10().round() as i32);
            (a..=b).map(|e| 10f64.powi(e)).collect()
        } else {
            (0..=5).map(|i| self.low + (self.high - self.low) * f64::from(i) / 5.0).collect()
        };
        values.into_iter().map(|v| (v, self.at(v))).collect()
    }
}

fn label(value: f64) -> String {
    match value.abs() {
        v if v >= 1e6 => format!("{}M", value / 1e6),
        v if v >= 1e3 => format!("{}k", value / 1e3),
        v if v >= 1.0 || v == 0.0 => format!("{value:.0}"),
        _ => format!("{value}"),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    //! The chart must be a well-formed SVG holding every series.

    use super::*;

    #[test]
    fn a_chart_names_every_series_and_draws_its_points() {
        let series = vec![
            Series { label: "a<b".into(), points: vec![(1e4, 1.0), (1e6, 2.0)] },
            Series { label: "c".into(), points: vec![(1e4, 0.5), (1e6, 40.0)] },
        ];
        let axes = Axes { title: "t", x_label: "x", y_label: "y", log_x: true, log_y: true };
        let svg = svg(&axes, &series);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b") && !svg.contains("a<b"));
        assert!(svg.contains(">10k<") && svg.contains(">1M<"));
    }
}
