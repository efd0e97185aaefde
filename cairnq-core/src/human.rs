//! Durations as people write them, for every message and table that shows
//! one: "59m 58s", not "3598887 ms".
//!
//! One definition, so the library's errors, the worker's log and the CLI's
//! tables read a span the same way. Units are the ones `cairnq` accepts on
//! its command line (`ms`, `s`, `m`, `h`, `d`, and `y` for 365 days).

use std::time::Duration;

/// Unit sizes in milliseconds, largest first.
const UNITS: [(u128, &str); 5] =
    [(365 * 86_400_000, "y"), (86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s")];

/// `duration` in its two largest units, truncated: `950ms`, `42s`,
/// `59m 58s`, `1h 0m`, `3d 4h`.
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::human_duration;
/// assert_eq!(human_duration(Duration::from_millis(3_598_887)), "59m 58s");
/// assert_eq!(human_duration(Duration::from_secs(3_600)), "1h 0m");
/// assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
/// ```
pub fn human_duration(duration: Duration) -> String {
    in_units(duration, 2)
}

/// `duration` in its largest whole unit only: `950ms`, `42s`, `3m`, `5h`,
/// `12d` (a table's "3m ago").
///
/// ```
/// use std::time::Duration;
/// use cairnq_core::human_duration_coarse;
/// assert_eq!(human_duration_coarse(Duration::from_millis(3_598_887)), "59m");
/// ```
pub fn human_duration_coarse(duration: Duration) -> String {
    in_units(duration, 1)
}

fn in_units(duration: Duration, count: usize) -> String {
    let mut ms = duration.as_millis();
    let Some(first) = UNITS.iter().position(|(size, _)| ms >= *size) else { return format!("{ms}ms") };
    let mut parts = Vec::with_capacity(count);
    for (size, unit) in UNITS.iter().skip(first).take(count) {
        parts.push(format!("{}{unit}", ms / size));
        ms %= size;
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_their_largest_units() {
        let ms = Duration::from_millis;
        assert_eq!(human_duration(ms(0)), "0ms");
        assert_eq!(human_duration(ms(42_900)), "42s");
        assert_eq!(human_duration(ms(3_600_000 + 12_000)), "1h 0m");
        assert_eq!(human_duration(ms(3 * 86_400_000 + 4 * 3_600_000 + 59_000)), "3d 4h");
        assert_eq!(human_duration(ms(400 * 86_400_000)), "1y 35d");
        assert_eq!(human_duration_coarse(ms(2 * 86_400_000 + 5)), "2d");
        assert_eq!(human_duration_coarse(ms(950)), "950ms");
        assert_eq!(human_duration(Duration::MAX), "584942417355y 26d");
    }
}
