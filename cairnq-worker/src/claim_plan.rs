//! Sizing one claim transaction from what the worker is running now.
//!
//! A name with `batch`, its own `concurrency` or a resource gets a draw of
//! its own; every other name shares one draw. The order of the draws rotates
//! between polls so no name starves another. Limits are expressed as the
//! shared budgets of [`ClaimParams`], so the store applies them inside the
//! one transaction, each draw sized by what the earlier ones took:
//!
//! - budget 0: free call slots for single-task draws (one row = one call),
//!   plus the prefetch room of a worker whose names all share one draw
//!   (rows beyond the free slots wait in the claim loop's local buffer);
//!   a batch draw instead reserves one whole slot before the transaction;
//! - budget 1: rows this claim may take at all (claim batch size and the
//!   byte budget's estimate);
//! - budget 2..: free capacity of each declared resource.

use std::collections::BTreeMap;

use cairnq_core::store::{ClaimDraw, ClaimParams};

use crate::options::{TaskOptions, WorkerOptions};
use crate::state::LoadView;

const SLOTS: usize = 0;
const ROWS: usize = 1;
const FIRST_RESOURCE: usize = 2;

/// A claim ready to run, whether the limits left a draw out (then a
/// second claim right away may still find work), and the most rows it can
/// take (a claim that took them all likely left more due work behind).
#[derive(Debug)]
pub(crate) struct ClaimPlan {
    pub(crate) params: ClaimParams,
    pub(crate) left_out_draws: bool,
    pub(crate) max_rows: usize,
}

/// Names as the claim loop sees them: each own-draw name with its options,
/// and the names that share a draw.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameTable {
    pub(crate) own: Vec<(String, TaskOptions)>,
    /// `None`: any name (the worker claims unknown names too).
    pub(crate) shared: Option<Vec<String>>,
}

impl NameTable {
    /// Every name a probe should look for (`None`: any).
    pub(crate) fn probe_names(&self) -> Option<Vec<String>> {
        let shared = self.shared.as_ref()?;
        Some(self.own.iter().map(|(n, _)| n.clone()).chain(shared.iter().cloned()).collect())
    }

    /// Whether every name shares the one draw: only then may a claim take
    /// more rows than free call slots (no per-name cap, batch or resource
    /// has to be gated by what is running).
    pub(crate) fn only_shared(&self) -> bool {
        self.own.is_empty()
    }

    fn has_shared_draw(&self) -> bool {
        self.shared.as_ref().is_none_or(|names| !names.is_empty())
    }
}

/// Plans the next claim, or `None` when the worker has no room at all
/// (every slot busy, the byte budget reached, or every draw capped).
/// `load.calls` counts the locally buffered tasks too (each will take a
/// slot); `prefetch` is the room for rows beyond the free slots (0 unless
/// [`NameTable::only_shared`]).
pub(crate) fn plan_claim(
    options: &WorkerOptions,
    worker_id: &str,
    names: &NameTable,
    rotation: usize,
    load: &LoadView,
    prefetch: usize,
) -> Option<ClaimPlan> {
    let free = options.concurrency.saturating_sub(load.calls);
    let mut calls_left = free;
    let rows = row_allowance(options, load)?;
    let beyond_slots = (options.concurrency + prefetch).saturating_sub(load.calls) - free;
    if free + beyond_slots == 0 {
        return None;
    }
    let resources = resource_budgets(&options.resources, load);
    let mut draws = Vec::new();
    let mut left_out = false;
    for unit in rotated_units(names, rotation) {
        let draw = match unit {
            Some((name, opts)) => own_draw(options, name, opts, load, &mut calls_left),
            None => Some(draw(options.queues.clone(), names.shared.clone(), u32::MAX).spending(vec![SLOTS, ROWS])),
        };
        match draw {
            Some(d) => draws.push(d),
            None => left_out = true,
        }
    }
    if draws.is_empty() {
        return None;
    }
    let mut budgets = vec![clamp(calls_left + beyond_slots), rows];
    budgets.extend(resources);
    let params = draws.into_iter().fold(ClaimParams::new(worker_id, options.lease_ms()), ClaimParams::draw);
    let params = params.budgets(budgets);
    // Every draw capped at zero (a busy resource): no transaction can take
    // anything until a call ends.
    let max_rows = max_rows(&params);
    (max_rows > 0).then_some(ClaimPlan { params, left_out_draws: left_out, max_rows })
}

/// The most rows the draws can take together, spending the budgets in order.
fn max_rows(params: &ClaimParams) -> usize {
    let mut plan = params.plan();
    (0..params.draws.len())
        .map(|i| {
            let limit = plan.limit(i) as usize;
            plan.took(i, limit);
            limit
        })
        .sum()
}

/// The draw units in this poll's order: own-draw names, and `None` for the
/// shared draw.
fn rotated_units(names: &NameTable, rotation: usize) -> Vec<Option<(&String, &TaskOptions)>> {
    let mut units: Vec<_> = names.own.iter().map(|(n, o)| Some((n, o))).collect();
    if names.has_shared_draw() {
        units.push(None);
    }
    if !units.is_empty() {
        let len = units.len();
        units.rotate_left(rotation % len);
    }
    units
}

/// The draw of a name with its own options, or `None` when its caps are
/// reached (or no call slot is left for a batch).
fn own_draw(
    options: &WorkerOptions,
    name: &str,
    opts: &TaskOptions,
    load: &LoadView,
    calls_left: &mut usize,
) -> Option<ClaimDraw> {
    let running = load.by_name.get(name).copied().unwrap_or(0);
    let name_calls_left = opts.concurrency.map_or(usize::MAX, |cap| cap.saturating_sub(running));
    if name_calls_left == 0 {
        return None;
    }
    let resource = opts.resource.as_ref().and_then(|r| options.resources.keys().position(|k| k == r));
    let resource_budget = resource.map(|i| FIRST_RESOURCE + i);
    let queues = options.queues.clone();
    let names = Some(vec![name.to_string()]);
    let draw = match opts.batch {
        Some(batch) => {
            if *calls_left == 0 {
                return None;
            }
            *calls_left -= 1;
            draw(queues, names, clamp(batch)).spending([ROWS].into_iter().chain(resource_budget).collect())
        }
        None => draw(queues, names, clamp(name_calls_left))
            .spending([SLOTS, ROWS].into_iter().chain(resource_budget).collect()),
    };
    Some(draw)
}

/// Rows this claim may take: the claim batch size, and under a byte budget
/// as many payloads of the mean size seen so far as fit in the room left
/// (at least one, so a payload larger than the budget still runs, alone).
/// `None` when the byte budget is already reached.
fn row_allowance(options: &WorkerOptions, load: &LoadView) -> Option<u32> {
    let batch_cap = options.claim_batch.unwrap_or(u32::MAX);
    let Some(budget) = options.max_in_flight_bytes else { return Some(batch_cap) };
    if load.bytes >= budget {
        return None;
    }
    let fitting = match load.mean_payload {
        None => 1,
        Some(mean) => ((budget - load.bytes) / mean.max(1)).max(1),
    };
    Some(batch_cap.min(u32::try_from(fitting).unwrap_or(u32::MAX)))
}

fn resource_budgets(resources: &BTreeMap<String, u32>, load: &LoadView) -> Vec<u32> {
    resources
        .iter()
        .map(|(name, capacity)| capacity.saturating_sub(load.by_resource.get(name).copied().unwrap_or(0)))
        .collect()
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A draw of up to `limit` rows of `names` (`None`: any name) on `queues`.
fn draw(queues: Vec<String>, names: Option<Vec<String>>, limit: u32) -> ClaimDraw {
    let draw = ClaimDraw::new(queues).limit(limit);
    match names {
        Some(names) => draw.names(names),
        None => draw,
    }
}

#[cfg(test)]
mod tests {
    //! The budget arithmetic, checked through `ClaimParams::plan`.

    use super::*;

    fn table() -> NameTable {
        NameTable {
            own: vec![
                ("embed".into(), TaskOptions::new().batch(8)),
                ("render".into(), TaskOptions::new().resource("gpu")),
            ],
            shared: Some(vec!["email".into()]),
        }
    }

    fn options() -> WorkerOptions {
        WorkerOptions::new().concurrency(3).resource("gpu", 1)
    }

    #[test]
    fn a_batch_reserves_one_slot_and_a_resource_caps_its_draw() {
        let plan = plan_claim(&options(), "w", &table(), 0, &LoadView::default(), 0);
        let params = plan.map(|p| p.params);
        let Some(params) = params else { panic!("expected a plan") };
        let p = params.plan();
        assert_eq!(p.limit(0), 8, "the batch draw takes up to its batch size");
        assert_eq!(p.limit(1), 1, "gpu capacity 1");
        assert_eq!(p.limit(2), 2, "three slots minus the batch's reserved one");
    }

    #[test]
    fn rotation_changes_the_first_draw() {
        let first = |rotation| {
            plan_claim(&options(), "w", &table(), rotation, &LoadView::default(), 0)
                .and_then(|p| p.params.draws.first().and_then(|d| d.names.clone()))
        };
        assert_ne!(first(0), first(1));
    }

    #[test]
    fn a_full_byte_budget_stops_claiming() {
        let options = options().max_in_flight_bytes(100);
        let load = LoadView { bytes: 100, ..LoadView::default() };
        assert!(plan_claim(&options, "w", &table(), 0, &load, 0).is_none());
        let load = LoadView { bytes: 40, mean_payload: Some(30), ..LoadView::default() };
        assert_eq!(row_allowance(&options, &load), Some(2));
    }
}
