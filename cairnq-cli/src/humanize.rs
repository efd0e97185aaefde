//! Times for people: durations on the command line ("30s", "7d", "1h 30m")
//! and relative times in tables ("3m ago", "in 20s").

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses a duration argument (clap's `value_parser`): a number and a unit,
/// e.g. `500ms`, `30s`, `10m`, `2h`, `7d`, `1h 30m`.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration: {e}; write e.g. 30s, 10m, 7d or 1h30m"))
}

/// Now, in Unix milliseconds (the protocol's time).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `at_ms` relative to `now_ms`: "3m ago", "in 20s", "now".
pub(crate) fn relative(at_ms: i64, now_ms: i64) -> String {
    let delta = now_ms.saturating_sub(at_ms);
    if delta.abs() < 1000 {
        return "now".to_string();
    }
    let span = short(delta.unsigned_abs());
    if delta > 0 { format!("{span} ago") } else { format!("in {span}") }
}

/// A span of milliseconds in its largest whole unit: "950ms", "42s", "3m",
/// "5h", "12d" (the library's one way of writing spans, coarse for tables).
pub(crate) fn short(ms: u64) -> String {
    cairnq_core::human_duration_coarse(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(duration("soon").expect_err("not a duration").contains("e.g. 30s"));
    }

    #[test]
    fn relative_times_read_like_speech() {
        assert_eq!(relative(1_000, 1_500), "now");
        assert_eq!(relative(0, 180_000), "3m ago");
        assert_eq!(relative(30_000, 10_000), "in 20s");
        assert_eq!(short(2 * 86_400_000 + 5), "2d");
    }
}
