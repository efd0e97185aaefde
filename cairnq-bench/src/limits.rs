//! What flow control costs (issue 25's benchmarks): a burn-down whose
//! every task carries a limit key under a limit that never binds (the
//! price of the limit-aware claim itself, to set beside `burn_down_c8` /
//! `burn_down_c64`), and the latency of a claim of unlimited work beside a
//! key holding a large throttled backlog (a claim must skip that backlog,
//! not scan it).

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, Error, Limit, Result, SubmitOptions, TaskSpec};
use serde_json::json;

use super::percentiles;
use super::workloads::{burn_down, burn_down_specs, median_claim_ms, noop_specs};
use cairnq_testkit::BackendFactory;

/// How many keys the limited burn-down spreads its tasks over (tenants
/// under one `*` default, so the claim meets several keys per round).
pub(super) const BURN_KEYS: usize = 16;

/// A concurrency no burn-down comes near. Not the worker's concurrency
/// plus one: a worker claims ahead of its handlers (up to about a thousand
/// rows in one claim at concurrency 8), its claimed rows are `running` and
/// count against the limit, so such a limit binds the claim-ahead.
pub(super) const ROOMY: u32 = 1_000_000;

/// Unlimited and limited burn-downs alternated in one process, this many
/// times each: the two vary together with the machine's load, so their
/// ratio is read pair by pair (issue 25's target is a ratio).
pub(super) const PAIRS: usize = 3;

/// Medians of [`PAIRS`] alternated burn-downs: the limited and the
/// unlimited rate (tasks/s) and the limited over the unlimited, pair by
/// pair.
pub(super) struct Paired {
    pub(super) limited: f64,
    pub(super) unlimited: f64,
    pub(super) ratio: f64,
}

/// [`burn_down_limited`] and the plain burn-down of as many tasks at the
/// same concurrency, alternated [`PAIRS`] times (see [`Paired`]).
pub(super) async fn burn_down_limited_paired(
    factory: &dyn BackendFactory,
    count: usize,
    concurrency: usize,
) -> Result<Paired> {
    let (mut limited, mut unlimited, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let plain = burn_down(factory, count, concurrency, || Ok(())).await?;
        let keyed = burn_down_limited(factory, count, concurrency).await?;
        ratios.push(keyed / plain.max(1e-9));
        unlimited.push(plain);
        limited.push(keyed);
    }
    let median = |samples: Vec<f64>| percentiles(samples).0;
    Ok(Paired { limited: median(limited), unlimited: median(unlimited), ratio: median(ratios) })
}

/// Drains `count` no-op tasks at `concurrency`, task `i` keyed
/// `tenant:{i % 16}` under a `tenant:*` default of concurrency [`ROOMY`],
/// which never binds; tasks per second.
pub(super) async fn burn_down_limited(factory: &dyn BackendFactory, count: usize, concurrency: usize) -> Result<f64> {
    let limit = Limit::new("tenant:*").concurrency(ROOMY);
    let specs = (0..count).map(|i| {
        TaskSpec::new("noop", &json!({})).options(SubmitOptions::new().limit_key(format!("tenant:{}", i % BURN_KEYS)))
    });
    burn_down_specs(factory, specs.collect(), concurrency, &[limit], || Ok(())).await
}

/// The median time of a claim of 1 (of `claims` claims) from a queue of
/// `queued` unlimited tasks, with `throttled` tasks of one key queued ahead
/// of them (older, same priority) while that key is at its concurrency of
/// 1: its one admitted task is claimed first, so every measured claim must
/// pass over the rest. With `throttled` 0 the limit is still set (the claim
/// takes the same limit-aware path), so the two readings differ only by
/// the backlog. Every measured claim must take an unlimited task.
pub(super) async fn claim_beside_throttled(
    factory: &dyn BackendFactory,
    queued: usize,
    throttled: usize,
    claims: usize,
) -> Result<f64> {
    let client = CairnQ::from_shared(factory.fresh().await?.store);
    client.set_limit(&Limit::new("hog").concurrency(1)).await?;
    let hog = SubmitOptions::new().limit_key("hog");
    let hogs: Vec<TaskSpec> = noop_specs(throttled, &json!({})).into_iter().map(|s| s.options(hog.clone())).collect();
    for chunk in hogs.chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let lease = Duration::from_secs(3_600);
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["noop".into()]).limit(1);
    if throttled > 0 {
        let holder = client.worker_session("hog-holder", lease)?;
        let held = holder.claim(vec![draw.clone()], Vec::new()).await?;
        if held.len() != 1 || held[0].limit_key().as_deref() != Some("hog") {
            return Err(Error::validation("claim_beside_throttled", "the first claim did not take the hog's task"));
        }
    }
    for chunk in noop_specs(queued, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let session = client.worker_session("bench", lease)?;
    median_claim_ms(&session, &draw, claims, |claimed| claimed.len() == 1 && claimed[0].limit_key().is_none()).await
}
