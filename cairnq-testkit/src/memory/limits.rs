//! Flow control in [`MemoryStore`](super::MemoryStore): the limits and the
//! rate state in maps of their own (the `ext_0006` tables), and the
//! admission of a claim, computed as the SQL backends compute it (the
//! running count from the task rows, the rate from one theoretical arrival
//! time per key) with the core's [`Admission`].

use std::collections::{BTreeMap, HashMap};

use cairnq_core::Result;
use cairnq_core::backend::Admission;
use cairnq_core::store::{LimitRow, LimitsQuery, RemoveLimitParams, SetLimitParams};

use super::MemoryStore;
use super::tables::Tables;

/// `cairnq_ext_limits` and `cairnq_ext_limit_state`.
#[derive(Debug, Default)]
pub(super) struct Limits {
    rows: BTreeMap<String, LimitRow>,
    /// Theoretical arrival time per actual key.
    state: HashMap<String, i64>,
}

impl Limits {
    /// The admissions of one claim at `now_ms`, or `None` when no limit is
    /// set (the claim is then the plain one).
    pub(super) fn admission(&self, tables: &Tables, now_ms: i64) -> Option<Admission> {
        if self.rows.is_empty() {
            return None;
        }
        let rows: Vec<LimitRow> = self.rows.values().cloned().collect();
        let mut admission = Admission::new(&rows, now_ms);
        let mut running: HashMap<String, u64> = HashMap::new();
        for key in tables.running_tasks().filter_map(|t| t.limit_key()) {
            *running.entry(key).or_default() += 1;
        }
        for (key, n) in running {
            admission.observe_running(&key, n);
        }
        for (key, tat) in &self.state {
            admission.observe_tat(key, Some(*tat));
        }
        Some(admission)
    }

    /// Stores the rate state the claim's starts left.
    pub(super) fn record(&mut self, admission: &Admission) {
        self.state.extend(admission.rate_states());
    }
}

impl MemoryStore {
    fn limit_tables(&self) -> std::sync::MutexGuard<'_, Limits> {
        self.limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn read_limits(&self, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
        self.read(|_, _| Ok(()))?;
        let limits = self.limit_tables();
        Ok(limits.rows.values().filter(|r| query.key.as_ref().is_none_or(|k| *k == r.key)).cloned().collect())
    }

    pub(super) fn upsert_limit(&self, params: &SetLimitParams) -> Result<LimitRow> {
        let now_ms = self.read(|_, now_ms| Ok(now_ms))?;
        let mut row = params.row.clone();
        row.updated_at_ms = now_ms;
        self.limit_tables().rows.insert(row.key.clone(), row.clone());
        Ok(row)
    }

    pub(super) fn delete_limit(&self, params: &RemoveLimitParams) -> Result<bool> {
        self.read(|_, _| Ok(()))?;
        Ok(self.limit_tables().rows.remove(&params.key).is_some())
    }

    /// Runs `claim` with the limits locked for its whole length, so what
    /// it admits and the rate state it leaves are one transaction.
    pub(super) fn with_limits<T>(&self, claim: impl FnOnce(&mut Limits) -> Result<T>) -> Result<T> {
        claim(&mut self.limit_tables())
    }
}
