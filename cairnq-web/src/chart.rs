//! The overview's throughput chart: tasks finished per minute over the last
//! hour, as an SVG drawn on the server (no chart library, no script).
//!
//! The numbers come from the hub's samples of the finished-task count, so
//! the chart covers the time this dashboard has been running (up to an
//! hour); a purge in between lowers the count and reads as zero, never as
//! negative throughput.

use maud::{Markup, html};

use crate::live::Sample;

const MINUTES: usize = 60;
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 120.0;

/// Tasks finished in each of the last [`MINUTES`] minutes, oldest first;
/// `None` for a minute with no sample on both sides.
pub(crate) fn per_minute(samples: &[Sample], now_ms: i64) -> Vec<Option<u64>> {
    let minute_start = now_ms - now_ms.rem_euclid(60_000);
    (0..MINUTES)
        .map(|i| {
            let start = minute_start - (MINUTES as i64 - 1 - i as i64) * 60_000;
            let end = start + 60_000;
            // The last reading before the minute, else the first inside it.
            let before = samples
                .iter()
                .rev()
                .find(|s| s.at_ms < start)
                .or_else(|| samples.iter().find(|s| s.at_ms >= start && s.at_ms < end))?;
            let after = samples.iter().rev().find(|s| s.at_ms < end && s.at_ms >= before.at_ms)?;
            (after.at_ms > before.at_ms || before.at_ms < start).then(|| after.finished.saturating_sub(before.finished))
        })
        .collect()
}

/// The bar chart of [`per_minute`].
pub(crate) fn throughput(samples: &[Sample], now_ms: i64) -> Markup {
    let minutes = per_minute(samples, now_ms);
    let peak = minutes.iter().flatten().copied().max().unwrap_or(0).max(1);
    let bar = WIDTH / MINUTES as f64;
    let last = minutes.iter().rev().flatten().next().copied();
    html! {
        figure.chart {
            svg #throughput viewBox={ "0 0 " (WIDTH) " " (HEIGHT + 14.0) } role="img"
                aria-label="Tasks finished per minute, last 60 minutes" {
                line x1="0" y1=(HEIGHT) x2=(WIDTH) y2=(HEIGHT) class="axis" {}
                @for (i, minute) in minutes.iter().enumerate() {
                    @if let Some(n) = minute {
                        @let h = (*n as f64 / peak as f64) * (HEIGHT - 4.0);
                        rect x=(format!("{:.1}", i as f64 * bar + 1.0)) y=(format!("{:.1}", HEIGHT - h))
                            width=(format!("{:.1}", bar - 2.0)) height=(format!("{h:.1}")) {
                            title { (n) " finished, " (MINUTES - i) " min ago" }
                        }
                    }
                }
                text x="0" y=(HEIGHT + 12.0) { "60 min ago" }
                text x=(WIDTH) y=(HEIGHT + 12.0) text-anchor="end" { "now" }
                text x="2" y="10" { "peak " (peak) "/min" }
            }
            figcaption {
                "Finished per minute"
                @if let Some(n) = last { ", last minute: " strong #last-minute { (n) } }
                " (sampled while this dashboard runs)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_counts_what_finished_in_it_and_a_purge_counts_zero() {
        let now = 10 * 60_000 + 30_000;
        let samples = [
            Sample { at_ms: 8 * 60_000 + 50_000, finished: 10 },
            Sample { at_ms: 9 * 60_000 + 50_000, finished: 25 },
            Sample { at_ms: 10 * 60_000 + 20_000, finished: 5 },
        ];
        let minutes = per_minute(&samples, now);
        assert_eq!(minutes[59], Some(0), "a purge lowered the count");
        assert_eq!(minutes[58], Some(15));
        assert_eq!(minutes[57], None, "no sample before minute 8 ended");
    }
}
