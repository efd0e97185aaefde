//! The chaos test over limited work (issue 25's acceptance): worker
//! processes SIGKILLed at random while they drain keys under a concurrency
//! limit. A limit counted from the task rows has nothing to leak, but a kill
//! tests both ways it could still go wrong: a killed process's slot must
//! come back (its row leaves `running` when the lease expires, or its key
//! drains at a reduced width or stalls), and it must not come back early
//! (a row given up while its handler still ran would let a live attempt
//! over the limit). The run logs say when every handler ran, so the check
//! is on the work itself, not on what the store believed.

use std::collections::HashMap;

use cairnq_core::{Limit, SubmitOptions, TaskSpec};
use serde_json::json;

use super::{Chaos, Plan, env_seed, fresh};
use crate::BackendFactory;

/// The concurrency of every key.
const LIMIT: usize = 2;

/// The keys, under one `k:*` default.
const KEYS: [&str; 3] = ["k:a", "k:b", "k:c"];

/// 300 record tasks over 3 keys under a `k:*` default of concurrency 2,
/// drained by 4 worker processes of concurrency 8 while the test SIGKILLs
/// one at random 6 times (each replaced), as [`random_sigkills_lose_no_task`]
/// does, but aimed: the victim is a process in the middle of a handler run
/// when one is (only 6 runs are admitted at a time, so a blind kill often
/// lands on an idle process). Then:
///
/// - at no instant do more than 2 handler runs of a key run on live
///   processes: a run counts from its logged start until its logged end,
///   or until its process was killed (a killed attempt stops counting when
///   it is killed, though its row holds the slot until the lease expires);
/// - nothing is lost and every repeated run is explained by a kill (the
///   account of [`random_sigkills_lose_no_task`]);
/// - the killed processes' slots come back: every run a kill cut short is
///   followed by a later attempt of its task, started after the kill (its
///   row went back to `queued` when the lease expired, freeing the slot),
///   and the drain finishes (a key whose slots stayed with the dead would
///   stall; the summary prints how long each cut task waited).
///
/// Each handler sleeps 20 to 60 ms, so the limit binds (24 claim slots
/// against 6 admitted runs) for the whole drain. `CAIRNQ_CHAOS_SEED` picks
/// the schedule. Skipped (with a message) when the factory gives no locator.
///
/// [`random_sigkills_lose_no_task`]: super::random_sigkills_lose_no_task
pub async fn random_sigkills_never_break_a_limit(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let limit = u32::try_from(LIMIT).expect("a small limit");
    client.set_limit(&Limit::new("k:*").concurrency(limit)).await.expect("set the limit");
    let plan = Plan { tasks: 300, kills: 6, workers: 4, concurrency: 8, lease_ms: 2_000, seed: env_seed(), aim: true };
    let mut rng = fastrand::Rng::with_seed(plan.seed);
    let options = SubmitOptions::default().max_attempts(plan.max_attempts());
    let specs = (0..plan.tasks).map(|i| {
        let options = options.clone().limit_key(KEYS[i % KEYS.len()]);
        TaskSpec::new("record", &json!({ "ms": rng.u64(20..=60) })).options(options)
    });
    let specs = specs.collect();
    let chaos = Chaos::run(&client, locator, plan, &mut rng, specs).await;
    let key_of: HashMap<&str, String> =
        chaos.rows.iter().filter_map(|t| Some((t.id.as_str(), t.limit_key()?))).collect();
    let mut problems = Vec::new();
    if key_of.len() != plan.tasks {
        problems.push(format!("{} of {} rows carry their limit key", key_of.len(), plan.tasks));
    }
    let mut spans: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    for (task, from, until) in chaos.runs.live_spans(&chaos.fleet.members) {
        match key_of.get(task) {
            Some(key) => spans.entry(key.as_str()).or_default().push((from, until)),
            None => problems.push(format!("{task} ran but is no task of this test")),
        }
    }
    for key in KEYS {
        let (peak, at) = peak(spans.get(key).map_or(&[][..], Vec::as_slice));
        println!("{key}: at most {peak} live runs at once (first at {at})");
        if peak > LIMIT {
            problems.push(format!("{key}: {peak} live runs at once at {at}, over its limit of {LIMIT}"));
        }
    }
    let waits = chaos.runs.cut_waits(&chaos.fleet.members);
    if let (Some(shortest), Some(longest)) = (waits.iter().min(), waits.iter().max()) {
        println!("{} cut runs ran again {shortest} to {longest} ms after their kill", waits.len());
    }
    chaos.verdict(factory.name(), problems);
}

/// The most spans live at one instant, and the first instant it happened:
/// the spans live at each span's start (one that ended at that instant is
/// over; a span holds its own start even if it ended in the same ms).
fn peak(spans: &[(i64, i64)]) -> (usize, i64) {
    let live_at = |i: usize| {
        let at = spans[i].0;
        let live = spans.iter().enumerate().filter(|&(j, &(from, until))| from <= at && (until > at || j == i));
        (live.count(), at)
    };
    (0..spans.len()).map(live_at).max_by_key(|&(n, at)| (n, -at)).unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::peak;

    #[test]
    fn peak_counts_what_overlaps_and_not_what_touches() {
        assert_eq!(peak(&[]), (0, 0));
        assert_eq!(peak(&[(0, 10), (10, 20), (20, 30)]), (1, 0), "runs that touch do not overlap");
        assert_eq!(peak(&[(0, 10), (5, 5), (9, 20), (12, 13)]), (2, 5), "a run of no length still ran");
        assert_eq!(peak(&[(0, 10), (5, 15), (8, 9), (15, 16)]), (3, 8));
        assert_eq!(peak(&[(0, i64::MAX), (100, 200), (300, 400)]), (2, 100), "a run never ended stays live");
    }
}
