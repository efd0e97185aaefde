//! What one fire of a due schedule does, decided from the slot the row
//! holds and the store's "now": which slots get a task, how many count as
//! missed, and the next slot. Pure, so the policies are tested on exact
//! clocks.

use std::time::Duration;

use super::{CatchUp, ScheduleSpec};
use crate::error::Result;

/// A slot this late or less is on time, whatever the policy: workers check
/// every second or so, and a busy host may be a few seconds late.
pub(crate) const ON_TIME: Duration = Duration::from_secs(10);

/// The most missed slots a fire counts one by one (a cron spec after a very
/// long outage); the count saturates there.
const COUNT_CAP: u64 = 100_000;

/// The outcome of planning one fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FirePlan {
    /// The slots that get a task, oldest first.
    pub(crate) slots: Vec<i64>,
    /// Slots passed over.
    pub(crate) missed: u64,
    /// The first slot after now (`None`: the spec never fires again).
    pub(crate) next_fire_ms: Option<i64>,
}

/// Plans the fire of a schedule whose row holds `from_ms` as its next
/// fire, at `now_ms`. With `overlap_blocked` (overlap skip and the
/// previous fire's task still live) every due slot is passed over.
pub(crate) fn plan_fire(
    spec: &ScheduleSpec,
    catch_up: CatchUp,
    from_ms: i64,
    now_ms: i64,
    overlap_blocked: bool,
) -> Result<FirePlan> {
    let next_fire_ms = spec.next_after(now_ms)?;
    let cutoff = (now_ms - ON_TIME.as_millis() as i64).max(from_ms);
    let late = spec.count_between(from_ms, cutoff, COUNT_CAP)?;
    let on_time = spec.newest_between(cutoff, now_ms + 1, u64::MAX)?;
    if overlap_blocked {
        return Ok(FirePlan { slots: Vec::new(), missed: late + on_time.len() as u64, next_fire_ms });
    }
    let replay = match catch_up {
        CatchUp::Skip => Vec::new(),
        CatchUp::Latest if on_time.is_empty() => spec.newest_between(from_ms, cutoff, 1)?,
        CatchUp::Latest => Vec::new(),
        CatchUp::All { window, max } => {
            let since = now_ms.saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
            spec.newest_between(since.max(from_ms), cutoff, u64::from(max))?
        }
    };
    let missed = late - replay.len() as u64;
    Ok(FirePlan { slots: replay.into_iter().chain(on_time).collect(), missed, next_fire_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn every_second() -> ScheduleSpec {
        ScheduleSpec::parse("@every 1s", "UTC").expect("parses")
    }

    /// The row held slot 1_000_000 (ms); every process was down for 10 minutes.
    fn after_outage(catch_up: CatchUp) -> FirePlan {
        let from = 1_000_000;
        plan_fire(&every_second(), catch_up, from, from + 10 * MIN, false).expect("plans")
    }

    #[test]
    fn on_time_slots_fire_under_every_policy() {
        for policy in [CatchUp::Skip, CatchUp::Latest, CatchUp::all()] {
            let plan = plan_fire(&every_second(), policy, 5_000, 7_200, false).expect("plans");
            assert_eq!(plan, FirePlan { slots: vec![5_000, 6_000, 7_000], missed: 0, next_fire_ms: Some(8_000) });
        }
    }

    /// A cron slot fired within its first second (a worker checks every
    /// second, so the first check after a slot usually is) fires, and the
    /// next fire moves past it; at the slot's very millisecond too.
    #[test]
    fn a_cron_slot_fires_when_checked_within_its_first_second() {
        let spec = ScheduleSpec::parse("* * * * *", "UTC").expect("parses");
        for now in [MIN, MIN + 1, MIN + 400, MIN + 999, MIN + 1_000] {
            let plan = plan_fire(&spec, CatchUp::Latest, MIN, now, false).expect("plans");
            assert_eq!(plan, FirePlan { slots: vec![MIN], missed: 0, next_fire_ms: Some(2 * MIN) }, "at {now}");
        }
    }

    #[test]
    fn skip_fires_only_the_slots_within_the_grace() {
        let plan = after_outage(CatchUp::Skip);
        let on_time: Vec<i64> = (0..=10).map(|s| 1_000_000 + 10 * MIN - 10_000 + s * 1_000).collect();
        assert_eq!(plan.slots, on_time);
        assert_eq!(plan.missed, 600 - 10);
        assert_eq!(plan.next_fire_ms, Some(1_000_000 + 10 * MIN + 1_000));
    }

    #[test]
    fn latest_fires_the_newest_missed_slot_once() {
        let spec = ScheduleSpec::parse("*/5 * * * *", "UTC").expect("parses");
        let plan = plan_fire(&spec, CatchUp::Latest, 0, 10 * MIN + 30_000, false).expect("plans");
        assert_eq!(plan, FirePlan { slots: vec![10 * MIN], missed: 2, next_fire_ms: Some(15 * MIN) });
    }

    #[test]
    fn all_replays_within_window_and_cap() {
        let spec = ScheduleSpec::parse("* * * * *", "UTC").expect("parses");
        let all = CatchUp::All { window: Duration::from_secs(5 * 60), max: 3 };
        let plan = plan_fire(&spec, all, 0, 10 * MIN + 30_000, false).expect("plans");
        assert_eq!(plan, FirePlan { slots: vec![8 * MIN, 9 * MIN, 10 * MIN], missed: 8, next_fire_ms: Some(11 * MIN) });
    }

    /// Every process was down across a DST night (the vectors of the spec
    /// tests): `all` replays the three daily slots, the changed day's once;
    /// `latest` fires the newest and counts two missed.
    #[test]
    fn catch_up_across_a_dst_change_fires_each_local_slot_once() {
        for (spec, tz, [first, second, third]) in crate::schedule::spec::tests::dst_vectors() {
            let spec = ScheduleSpec::parse(spec, tz).expect("parses");
            let now = third + 12 * 60 * MIN;
            let all = CatchUp::All { window: Duration::from_secs(7 * 24 * 3600), max: 100 };
            let next = spec.next_after(now).expect("in range");
            let plan = plan_fire(&spec, all, first, now, false).expect("plans");
            assert_eq!(plan, FirePlan { slots: vec![first, second, third], missed: 0, next_fire_ms: next }, "{tz}");
            let plan = plan_fire(&spec, CatchUp::Latest, first, now, false).expect("plans");
            assert_eq!(plan, FirePlan { slots: vec![third], missed: 2, next_fire_ms: next }, "{tz}");
        }
    }

    #[test]
    fn a_blocked_overlap_passes_every_due_slot() {
        let plan = plan_fire(&every_second(), CatchUp::Latest, 5_000, 7_200, true).expect("plans");
        assert_eq!(plan, FirePlan { slots: vec![], missed: 3, next_fire_ms: Some(8_000) });
    }
}
