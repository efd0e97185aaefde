//! Flow control in [`MemoryStore`](super::MemoryStore): the limits and the
//! rate state in maps of their own (the `ext_0006` tables), and the
//! admission of a claim, computed as the SQL backends compute it (the
//! running count from the task rows, the rate from one theoretical arrival
//! time per key) with the core's [`Admission`].

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};

use cairnq_core::backend::{Admission, LimitBook};
use cairnq_core::store::{
    KeyUsage, LimitRow, LimitUsage, LimitWaitParams, LimitsQuery, RemoveLimitParams, SetLimitParams,
};
use cairnq_core::{Result, Task};

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

/// One key's due rows at one priority, oldest first.
type KeyGroup<'t> = (String, VecDeque<&'t Task>);

/// The ids of `due` (one draw's due rows, in claim order) the limits let
/// start, at most `limit`, in the order the SQL backends take them: on one
/// queue, the keys of each priority take turns (the empty key, no key,
/// first; then by key), oldest first within a key; over several queues,
/// claim order.
pub(super) fn admitted(due: Vec<&Task>, one_queue: bool, limit: usize, admission: &mut Admission) -> Vec<String> {
    if !one_queue {
        let keyed = due.into_iter().map(|t| (t.id.clone(), t.limit_key()));
        return keyed.filter(|(_, key)| admission.try_start(key.as_deref())).take(limit).map(|(id, _)| id).collect();
    }
    let mut groups: BTreeMap<(Reverse<i32>, String), VecDeque<&Task>> = BTreeMap::new();
    for task in due {
        groups.entry((Reverse(task.priority), task.limit_key().unwrap_or_default())).or_default().push_back(task);
    }
    let mut picked = Vec::new();
    let mut levels: Vec<(i32, Vec<KeyGroup<'_>>)> = Vec::new();
    for ((Reverse(priority), key), tasks) in groups {
        match levels.last_mut() {
            Some((at, level)) if *at == priority => level.push((key, tasks)),
            _ => levels.push((priority, vec![(key, tasks)])),
        }
    }
    for (_, mut level) in levels {
        let mut open = vec![true; level.len()];
        while picked.len() < limit && open.iter().any(|o| *o) {
            for ((key, tasks), open) in level.iter_mut().zip(open.iter_mut()) {
                if picked.len() >= limit || !*open {
                    continue;
                }
                let key = Some(key.as_str()).filter(|k| !k.is_empty());
                match tasks.pop_front() {
                    Some(task) if admission.try_start(key) => picked.push(task.id.clone()),
                    _ => *open = false,
                }
            }
        }
    }
    picked
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

    pub(super) fn usage(&self) -> Result<LimitUsage> {
        let state = self.limit_tables().state.clone();
        self.read(|tables, now_ms| {
            let mut keys: BTreeMap<String, KeyUsage> = BTreeMap::new();
            for task in tables.running_tasks() {
                if let Some(key) = task.limit_key() {
                    keys.entry(key.clone()).or_insert_with(|| KeyUsage::new(key)).running += 1;
                }
            }
            for task in tables.queued_tasks() {
                if let Some(key) = task.limit_key() {
                    keys.entry(key.clone()).or_insert_with(|| KeyUsage::new(key)).waiting += 1;
                }
            }
            for (key, tat) in state.into_iter().filter(|(_, tat)| *tat > now_ms) {
                keys.entry(key.clone()).or_insert_with(|| KeyUsage::new(key)).tat_ms = Some(tat);
            }
            Ok(LimitUsage::new(now_ms, keys.into_values().collect()))
        })
    }

    pub(super) fn rate_wait(&self, params: &LimitWaitParams) -> Result<Option<i64>> {
        let now_ms = self.read(|_, now_ms| Ok(now_ms))?;
        let since_ms = params.since_ms(now_ms);
        let limits = self.limit_tables();
        let book = LimitBook::new(&limits.rows.values().cloned().collect::<Vec<_>>());
        let states: Vec<(String, i64)> = limits.state.iter().map(|(key, tat)| (key.clone(), *tat)).collect();
        Ok(book.rate_wait(&states, since_ms, now_ms))
    }

    /// Runs `claim` with the limits locked for its whole length, so what
    /// it admits and the rate state it leaves are one transaction.
    pub(super) fn with_limits<T>(&self, claim: impl FnOnce(&mut Limits) -> Result<T>) -> Result<T> {
        claim(&mut self.limit_tables())
    }
}
