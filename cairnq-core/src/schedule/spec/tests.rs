//! DST vectors (the book's "Schedules" chapter documents them) and the spec grammar.

use chrono::{TimeZone, Utc};

use super::*;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().map(|t| t.timestamp_millis()).unwrap_or_default()
}

/// Every fire of `spec` in `tz` from `from` on, up to `n` of them.
fn fires(spec: &str, tz: &str, from: i64, n: usize) -> Vec<i64> {
    let spec = ScheduleSpec::parse(spec, tz).expect("spec parses");
    let mut out = Vec::new();
    let mut at = from;
    while out.len() < n {
        let Some(next) = spec.next_after(at).expect("in range") else { break };
        out.push(next);
        at = next;
    }
    out
}

#[test]
fn berlin_spring_forward_fires_once_right_after_the_gap() {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
    let got = fires("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12, 0), 2);
    assert_eq!(got, vec![utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]);
}

#[test]
fn berlin_fall_back_fires_once_at_the_first_pass() {
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    let got = fires("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12, 0), 2);
    assert_eq!(got, vec![utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]);
}

#[test]
fn new_york_spring_forward_fires_once_right_after_the_gap() {
    // 2026-03-08: 02:00 EST jumps to 03:00 EDT.
    let got = fires("30 2 * * *", "America/New_York", utc(2026, 3, 7, 12, 0), 2);
    assert_eq!(got, vec![utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]);
}

#[test]
fn new_york_fall_back_fires_once_at_the_first_pass() {
    // 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    let got = fires("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12, 0), 2);
    assert_eq!(got, vec![utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]);
}

#[test]
fn an_hourly_spec_skips_the_missing_hour_and_keeps_real_time() {
    let got = fires("@hourly", "Europe/Berlin", utc(2026, 3, 28, 23, 30), 3);
    assert_eq!(got, vec![utc(2026, 3, 29, 0, 0), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 2, 0)]);
}

#[test]
fn six_fields_take_seconds_and_every_is_anchored_at_the_epoch() {
    assert_eq!(fires("*/15 * * * * *", "UTC", 1_000, 2), vec![15_000, 30_000]);
    assert_eq!(fires("@every 90s", "Europe/Berlin", 100_000, 2), vec![180_000, 270_000]);
    assert_eq!(fires("@every 1m30s", "UTC", 0, 1), vec![90_000]);
}

#[test]
fn bad_specs_are_refused_with_the_field_named() {
    for (spec, tz) in [
        ("61 * * * *", "UTC"),
        ("* * *", "UTC"),
        ("* * * * * * * *", "UTC"),
        ("@every", "UTC"),
        ("@every 10x", "UTC"),
        ("@every 500ms", "UTC"),
        ("@every 99999999999999999999d", "UTC"),
        ("0 3 * * *", "Mars/Olympus"),
        ("", "UTC"),
    ] {
        let err = ScheduleSpec::parse(spec, tz).expect_err(spec);
        assert_eq!(err.kind(), crate::ErrorKind::ValidationError, "{spec}: {err}");
    }
}

#[test]
fn counting_and_newest_agree_for_cron_and_intervals() {
    for spec in ["* * * * *", "@every 60s"] {
        let spec = ScheduleSpec::parse(spec, "UTC").expect("parses");
        assert_eq!(spec.count_between(0, 600_000, u64::MAX).expect("counts"), 10);
        assert_eq!(spec.count_between(1, 600_001, 3).expect("counts"), 3);
        assert_eq!(spec.newest_between(0, 600_000, 2).expect("lists"), vec![480_000, 540_000]);
        assert_eq!(spec.prev_before(60_000).expect("prev"), Some(0));
    }
}

/// Every DST vector above, walked backwards as catch-up does
/// (`prev_before`, `newest_between`) and counted (`count_between`): the
/// same slots as walking forwards, the missing local time once, the
/// repeated one once.
#[test]
fn catch_up_walks_a_dst_night_backwards_to_the_same_slots() {
    for (spec, tz, expected) in dst_vectors() {
        let parsed = ScheduleSpec::parse(spec, tz).expect("spec parses");
        let (from, until) = (expected[0], expected[2] + 1);
        assert_eq!(parsed.newest_between(from, until, 10).expect("in range"), expected, "{spec} in {tz}");
        assert_eq!(parsed.newest_between(from, until, 1).expect("in range"), [expected[2]], "{spec} in {tz}");
        assert_eq!(parsed.count_between(from, until, u64::MAX).expect("in range"), 3, "{spec} in {tz}");
        assert_eq!(parsed.prev_before(expected[2]).expect("in range"), Some(expected[1]), "{spec} in {tz}");
        assert_eq!(fires(spec, tz, from - 1, 3), expected, "forwards agrees: {spec} in {tz}");
    }
}

/// Three consecutive daily fires around each DST change of the vectors:
/// the day before, the day of the change, the day after.
pub(crate) fn dst_vectors() -> [(&'static str, &'static str, [i64; 3]); 4] {
    [
        ("30 2 * * *", "Europe/Berlin", [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]),
        ("30 2 * * *", "Europe/Berlin", [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]),
        ("30 2 * * *", "America/New_York", [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]),
        (
            "30 1 * * *",
            "America/New_York",
            [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)],
        ),
    ]
}
