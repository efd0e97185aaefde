//! Times for people: durations on the command line ("30s", "7d", "1h 30m")
//! and relative times in tables ("3m ago", "in 20s").

use std::time::{Duration, SystemTime};

/// Parses a duration argument (clap's `value_parser`): a number and a unit,
/// e.g. `500ms`, `30s`, `10m`, `2h`, `7d`, `1h 30m`.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration: {e}; write e.g. 30s, 10m, 7d or 1h30m"))
}

/// Parses a point in time (clap's `value_parser`, `--since`/`--until`): a
/// duration ago (`10m`, `2h`, `1h 30m`), or an RFC 3339 timestamp
/// (`2026-03-01T10:00:00Z`, `2026-03-01 10:00:00+02:00`; no offset means UTC).
pub(crate) fn time(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "{text:?} is not a time: write a duration ago (e.g. 10m, 2h, 7d) or an RFC 3339 timestamp \
             (e.g. 2026-03-01T10:00:00Z)"
        )
    };
    if let Ok(ago) = humantime::parse_duration(text) {
        return SystemTime::now().checked_sub(ago).ok_or_else(bad);
    }
    let (local, offset_secs) = split_offset(text);
    let at = humantime::parse_rfc3339_weak(local).map_err(|_| bad())?;
    let shifted = match offset_secs {
        // Local time ahead of UTC: UTC is that much earlier.
        secs if secs >= 0 => at.checked_sub(Duration::from_secs(secs.unsigned_abs())),
        secs => at.checked_add(Duration::from_secs(secs.unsigned_abs())),
    };
    shifted.ok_or_else(bad)
}

/// A timestamp without its `+HH:MM` / `-HH:MM` offset, and the offset in
/// seconds (0 when there is none, or a `Z`, which humantime reads).
fn split_offset(text: &str) -> (&str, i64) {
    let Some(at) = text.len().checked_sub(6) else { return (text, 0) };
    let (local, tail) = text.split_at_checked(at).filter(|(_, tail)| tail.is_ascii()).unwrap_or((text, ""));
    let bytes = tail.as_bytes();
    let sign = match bytes.first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return (text, 0),
    };
    let (Ok(hours), b':', Ok(minutes)) = (tail[1..3].parse::<i64>(), bytes[3], tail[4..6].parse::<i64>()) else {
        return (text, 0);
    };
    // A date alone ends in "-DD": only a time part carries an offset.
    if !local.contains([':']) {
        return (text, 0);
    }
    (local, sign * (hours * 3600 + minutes * 60))
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
    fn times_are_a_duration_ago_or_a_timestamp() {
        let ms = |at: SystemTime| at.duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis();
        assert_eq!(ms(time("2024-12-01T00:00:00Z").expect("utc")), 1_733_011_200_000);
        assert_eq!(ms(time("2024-12-01 02:00:00+02:00").expect("an offset")), 1_733_011_200_000);
        assert_eq!(ms(time("2024-11-30T22:30:00-01:30").expect("behind utc")), 1_733_011_200_000);
        let ago = ms(SystemTime::now()) - ms(time("10m").expect("ago"));
        assert!((600_000..610_000).contains(&ago), "{ago}");
        assert!(time("yesterday").expect_err("not a time").contains("e.g. 10m"));
    }

    #[test]
    fn relative_times_read_like_speech() {
        assert_eq!(relative(1_000, 1_500), "now");
        assert_eq!(relative(0, 180_000), "3m ago");
        assert_eq!(relative(30_000, 10_000), "in 20s");
        assert_eq!(short(2 * 86_400_000 + 5), "2d");
    }
}
