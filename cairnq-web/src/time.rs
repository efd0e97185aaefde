//! Times as the pages show and the filters take them: UTC calendar text
//! (`2026-12-01 10:30:53Z`) from and to epoch milliseconds, and ages
//! (`3m 12s`). Small enough to own rather than pull in a calendar crate.

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// `2026-12-01 10:30:53Z`.
pub(crate) fn format_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let in_day = secs.rem_euclid(86_400);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z", in_day / 3600, in_day % 3600 / 60, in_day % 60)
}

/// Epoch milliseconds from `YYYY-MM-DDTHH:MM[:SS]` (UTC; a space or `T`
/// between date and time, a trailing `Z` allowed), or from plain epoch
/// milliseconds.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, clock) = text.split_once(['T', ' ']).unwrap_or((text, "00:00"));
    let mut date_parts = date.splitn(3, '-').map(str::parse::<i64>);
    let (Some(Ok(year)), Some(Ok(month)), Some(Ok(day))) = (date_parts.next(), date_parts.next(), date_parts.next())
    else {
        return None;
    };
    let mut clock_parts = clock.splitn(3, ':').map(str::parse::<i64>);
    let hour = clock_parts.next()?.ok()?;
    let minute = clock_parts.next()?.ok()?;
    let second = clock_parts.next().unwrap_or(Ok(0)).ok()?;
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second);
    valid.then(|| ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

/// `3m 12s`, `2h 5m`, `4d 1h`: the two largest units.
pub(crate) fn format_age(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_text_round_trips() {
        assert_eq!(format_ms(0), "1970-01-01 00:00:00Z");
        assert_eq!(format_ms(1_733_011_200_000), "2024-12-01 00:00:00Z");
        assert_eq!(parse_time("2024-12-01T00:00"), Some(1_733_011_200_000));
        assert_eq!(parse_time("2024-02-29 13:14:15Z"), Some(1_709_212_455_000));
        assert_eq!(format_ms(1_709_212_455_000), "2024-02-29 13:14:15Z");
        assert_eq!(parse_time("1733011200000"), Some(1_733_011_200_000));
        assert_eq!(parse_time("2024-13-01"), None);
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(format_age(192_000), "3m 12s");
    }
}
