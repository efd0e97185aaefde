//! When a schedule fires: a cron expression in an IANA time zone, or a
//! fixed interval, turned into slots (epoch milliseconds, UTC).
//!
//! Cron parsing and the DST rules are croner's (5 or 6 fields, seconds
//! optional, `@hourly`-style aliases): a fixed local time that falls in a
//! spring-forward gap fires once, at the first valid instant after it; a
//! fixed local time that occurs twice on a fall-back day fires once, at its
//! first pass. `@every <interval>` slots are multiples of the interval since
//! the Unix epoch, so every process computes the same slots without talking
//! to the others; the zone does not move them.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

use crate::error::{Error, Result};

/// The shortest `@every` interval: slots finer than a second would turn a
/// short outage into thousands of tasks.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// When a schedule fires, parsed and checked.
///
/// ```
/// use cairnq_core::ScheduleSpec;
/// let spec = ScheduleSpec::parse("0 3 * * *", "Europe/Berlin")?;
/// // 2026-03-29 is the spring-forward day in Berlin: 03:00 CEST is 01:00 UTC.
/// assert_eq!(spec.next_after(1_774_738_800_000)?, Some(1_774_746_000_000));
/// assert!(ScheduleSpec::parse("@every 90s", "UTC").is_ok());
/// assert!(ScheduleSpec::parse("61 * * * *", "UTC").is_err());
/// # Ok::<(), cairnq_core::Error>(())
/// ```
#[derive(Clone)]
pub struct ScheduleSpec {
    text: String,
    zone: Tz,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Cron(Box<Cron>),
    Every(i64),
}

impl fmt::Debug for ScheduleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleSpec").field("spec", &self.text).field("tz", &self.zone.name()).finish()
    }
}

impl PartialEq for ScheduleSpec {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.zone == other.zone
    }
}

impl ScheduleSpec {
    /// Parses `spec` (cron, alias or `@every 90s`) in the IANA zone `tz`.
    pub fn parse(spec: &str, tz: &str) -> Result<Self> {
        let zone = Tz::from_str(tz.trim())
            .map_err(|_| Error::validation("tz", format!("{tz:?} is not an IANA time zone name")))?;
        let text = spec.trim().to_string();
        let kind = match text.strip_prefix("@every") {
            Some(rest) => Kind::Every(parse_interval(rest)?),
            None => Kind::Cron(Box::new(parse_cron(&text)?)),
        };
        Ok(Self { text, zone, kind })
    }

    /// A fixed interval (at least [`MIN_INTERVAL`]), as `@every 30s`
    /// (whole seconds) or `@every 1500ms`.
    pub fn every(interval: Duration) -> Result<Self> {
        let ms = interval.as_millis();
        let text = if ms.is_multiple_of(1000) { format!("@every {}s", ms / 1000) } else { format!("@every {ms}ms") };
        Self::parse(&text, "UTC")
    }

    /// The spec as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The zone's IANA name.
    pub fn tz(&self) -> &str {
        self.zone.name()
    }

    /// The first slot strictly after `after_ms`, or `None` when the spec
    /// never fires again (a cron expression matching no future date).
    pub fn next_after(&self, after_ms: i64) -> Result<Option<i64>> {
        match &self.kind {
            Kind::Every(step) => Ok(after_ms.div_euclid(*step).checked_add(1).and_then(|n| n.checked_mul(*step))),
            Kind::Cron(cron) => {
                let mut from = self.at(after_ms)?;
                // croner searches whole seconds; step past anything not after `after_ms`.
                loop {
                    let Ok(next) = cron.find_next_occurrence(&from, false) else { return Ok(None) };
                    if next.timestamp_millis() > after_ms {
                        return Ok(Some(next.timestamp_millis()));
                    }
                    from = next;
                }
            }
        }
    }

    /// The last slot strictly before `before_ms`, if any.
    pub fn prev_before(&self, before_ms: i64) -> Result<Option<i64>> {
        match &self.kind {
            Kind::Every(step) => Ok((before_ms - 1).div_euclid(*step).checked_mul(*step)),
            Kind::Cron(cron) => {
                // croner searches whole seconds, dropping the milliseconds of
                // `from`: from a slot's own second plus some milliseconds it
                // would skip that slot. Start at `before_ms` rounded up to a
                // whole second instead (cron slots are whole seconds, so
                // none lies in between).
                let mut from = self.at(before_ms.saturating_add(999).div_euclid(1000).saturating_mul(1000))?;
                loop {
                    let Ok(prev) = cron.find_previous_occurrence(&from, false) else { return Ok(None) };
                    if prev.timestamp_millis() < before_ms {
                        return Ok(Some(prev.timestamp_millis()));
                    }
                    from = prev;
                }
            }
        }
    }

    /// How many slots lie in `[from_ms, until_ms)`, counting at most `cap`.
    pub fn count_between(&self, from_ms: i64, until_ms: i64, cap: u64) -> Result<u64> {
        if until_ms <= from_ms {
            return Ok(0);
        }
        if let Kind::Every(step) = self.kind {
            let first = (from_ms - 1).div_euclid(step) + 1;
            let last = (until_ms - 1).div_euclid(step);
            return Ok(u64::try_from(last - first + 1).unwrap_or(0).min(cap));
        }
        let mut count = 0;
        let mut at = from_ms - 1;
        while count < cap {
            match self.next_after(at)? {
                Some(slot) if slot < until_ms => {
                    count += 1;
                    at = slot;
                }
                _ => break,
            }
        }
        Ok(count)
    }

    /// The newest `n` slots in `[from_ms, until_ms)`, oldest first.
    pub fn newest_between(&self, from_ms: i64, until_ms: i64, n: u64) -> Result<Vec<i64>> {
        let mut slots = Vec::new();
        let mut before = until_ms;
        while (slots.len() as u64) < n {
            match self.prev_before(before)? {
                Some(slot) if slot >= from_ms => {
                    slots.push(slot);
                    before = slot;
                }
                _ => break,
            }
        }
        slots.reverse();
        Ok(slots)
    }

    fn at(&self, ms: i64) -> Result<DateTime<Tz>> {
        self.zone
            .timestamp_millis_opt(ms)
            .single()
            .ok_or_else(|| Error::validation("time", format!("{ms} ms is outside the supported range")))
    }
}

fn parse_cron(text: &str) -> Result<Cron> {
    let fields = text.split_whitespace().count();
    if !text.starts_with('@') && !(5..=6).contains(&fields) {
        return Err(Error::validation("spec", format!("{text:?}: a cron spec has 5 or 6 fields, not {fields}")));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(text)
        .map_err(|e| Error::validation("spec", format!("{text:?} is not a cron spec: {e}")))
}

/// `90s`, `1m30s`, `2h`, `1d`, `500ms` (whole units, summed) in milliseconds.
fn parse_interval(text: &str) -> Result<i64> {
    let bad = |why: &str| Error::validation("spec", format!("@every{text}: {why}"));
    let text = text.trim();
    if text.is_empty() {
        return Err(bad("needs an interval such as 90s"));
    }
    let mut total: i64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let number: i64 = rest[..digits].parse().map_err(|_| bad("expected a number before each unit"))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit_ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad("units are ms, s, m, h and d")),
        };
        rest = &rest[unit_len..];
        total = number.checked_mul(unit_ms).and_then(|ms| total.checked_add(ms)).ok_or_else(|| bad("too long"))?;
    }
    if total < MIN_INTERVAL.as_millis() as i64 {
        return Err(bad("the shortest interval is 1s"));
    }
    Ok(total)
}

#[cfg(test)]
pub(crate) mod tests;
