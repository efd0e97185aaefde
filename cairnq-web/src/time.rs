//! Times as the pages show and the filters take them: UTC calendar text
//! (`2026-12-01 10:30:53Z`) from and to epoch milliseconds. chrono does the
//! calendar; this module only fixes the one format the dashboard writes and
//! the few it reads, so every page and filter agrees on them.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

/// `2026-12-01 10:30:53Z`; a time past chrono's calendar (about 262,000
/// years either side of now, which a task's 64-bit epoch milliseconds can
/// hold) as its epoch milliseconds.
pub(crate) fn format_ms(ms: i64) -> String {
    match DateTime::from_timestamp_millis(ms) {
        Some(at) => at.format("%Y-%m-%d %H:%M:%SZ").to_string(),
        None => format!("{ms} (epoch ms)"),
    }
}

/// The date-and-time forms [`parse_time`] reads (after a trailing `Z`).
const DATE_TIMES: [&str; 4] = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"];

/// The time `YYYY-MM-DD[THH:MM[:SS]]` names (UTC; a space or `T` between
/// date and time, a trailing `Z` allowed, a date alone is its midnight),
/// or plain epoch milliseconds. `None` for anything else, including dates
/// that do not exist (February 30th).
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return DateTime::from_timestamp_millis(ms);
    }
    let text = text.strip_suffix('Z').unwrap_or(text);
    let at = DATE_TIMES
        .iter()
        .find_map(|form| NaiveDateTime::parse_from_str(text, form).ok())
        .or_else(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok().map(|date| date.and_time(NaiveTime::MIN)))?;
    Some(at.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` as epoch milliseconds, when it is a time.
    fn ms(text: &str) -> Option<i64> {
        parse_time(text).map(|at| at.timestamp_millis())
    }

    #[test]
    fn calendar_text_round_trips() {
        assert_eq!(format_ms(0), "1970-01-01 00:00:00Z");
        assert_eq!(format_ms(1_733_011_200_000), "2024-12-01 00:00:00Z");
        assert_eq!(format_ms(-1), "1969-12-31 23:59:59Z");
        assert_eq!(format_ms(i64::MAX), format!("{} (epoch ms)", i64::MAX));
        assert_eq!(ms("2024-12-01T00:00"), Some(1_733_011_200_000));
        assert_eq!(ms("2024-12-01"), Some(1_733_011_200_000));
        assert_eq!(ms(" 2024-12-01 00:00Z "), Some(1_733_011_200_000));
        assert_eq!(ms("2024-02-29 13:14:15Z"), Some(1_709_212_455_000));
        assert_eq!(format_ms(1_709_212_455_000), "2024-02-29 13:14:15Z");
        assert_eq!(ms("1733011200000"), Some(1_733_011_200_000));
        assert_eq!(ms("2024-13-01"), None);
        assert_eq!(ms("2023-02-29"), None, "not a day of the calendar");
        assert_eq!(ms("2024-12-01T24:00"), None);
        assert_eq!(ms("yesterday"), None);
    }
}
