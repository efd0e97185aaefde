//! The limit arithmetic of one claim, written once for every backend: which
//! limit applies to a key (the exact one, else the longest prefix), how many
//! of a key's tasks may start now (concurrency from the key's running rows,
//! rate from its GCRA state), and the rate state the starts leave behind.
//! The SQL flow (`cairnq_sql::flows::claim`) feeds it
//! what it read inside the claim transaction; a backend without SQL (the
//! testkit's `MemoryStore`) feeds it from its own tables.

use std::collections::{BTreeSet, HashMap};

use crate::store::LimitRow;

/// A rate as a GCRA: starts `interval_ms` apart, up to `tolerance_ms` early
/// (so `burst` starts at once after a quiet spell).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gcra {
    interval_ms: f64,
    tolerance_ms: f64,
}

impl Gcra {
    /// `count` starts per `period_ms`, `burst` at once (each at least 1).
    pub fn new(count: i64, period_ms: i64, burst: i64) -> Self {
        let interval_ms = period_ms.max(1) as f64 / count.max(1) as f64;
        Self { interval_ms, tolerance_ms: (burst.max(1) - 1) as f64 * interval_ms }
    }

    /// How many may start at `now_ms` given the stored theoretical arrival
    /// time (`None`: the key never started, or long ago).
    pub fn admits(&self, tat_ms: Option<i64>, now_ms: i64) -> u64 {
        let start = tat_ms.unwrap_or(now_ms).max(now_ms) as f64;
        let slack = now_ms as f64 + self.tolerance_ms - start;
        if slack < 0.0 {
            return 0;
        }
        // The epsilon keeps `burst` whole where (burst - 1) * T / T lands a
        // hair under an integer.
        (slack / self.interval_ms + 1e-9).floor() as u64 + 1
    }

    /// The theoretical arrival time after `starts` starts at `now_ms`
    /// (rounded up: the rate never runs faster than set).
    pub fn after(&self, tat_ms: Option<i64>, now_ms: i64, starts: u64) -> i64 {
        let start = tat_ms.unwrap_or(now_ms).max(now_ms) as f64;
        (start + starts as f64 * self.interval_ms).ceil() as i64
    }

    /// When the next start is admitted, in epoch ms (`now_ms` or later).
    pub fn next_admit(&self, tat_ms: Option<i64>, now_ms: i64) -> i64 {
        let start = tat_ms.unwrap_or(now_ms).max(now_ms) as f64;
        ((start - self.tolerance_ms).ceil() as i64).max(now_ms)
    }
}

/// What one limit bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bound {
    concurrency: Option<u64>,
    gcra: Option<Gcra>,
}

impl Bound {
    fn of(row: &LimitRow) -> Self {
        let gcra = match (row.rate_count, row.rate_period_ms) {
            (Some(count), Some(period)) => Some(Gcra::new(count, period, row.burst.unwrap_or(1))),
            _ => None,
        };
        Self { concurrency: row.concurrency.map(|n| n.max(0).unsigned_abs()), gcra }
    }
}

/// The limits in force, resolved per key: exact first, then the longest
/// prefix (`tenant:*`), else none.
#[derive(Debug, Clone, Default)]
pub struct LimitBook {
    exact: HashMap<String, Bound>,
    /// Longest prefix first.
    prefixes: Vec<(String, Bound)>,
}

impl LimitBook {
    /// The book of these rows.
    pub fn new(rows: &[LimitRow]) -> Self {
        let mut book = Self::default();
        for row in rows {
            match row.key.strip_suffix('*') {
                Some(prefix) => book.prefixes.push((prefix.to_string(), Bound::of(row))),
                None => {
                    book.exact.insert(row.key.clone(), Bound::of(row));
                }
            }
        }
        book.prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        book
    }

    /// Whether no limit is set at all.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.prefixes.is_empty()
    }

    fn bound(&self, key: &str) -> Option<Bound> {
        self.exact.get(key).copied().or_else(|| self.prefixes.iter().find(|(p, _)| key.starts_with(p)).map(|b| b.1))
    }

    /// Whether tasks of `key` are limited.
    pub fn limits(&self, key: &str) -> bool {
        self.bound(key).is_some()
    }

    /// The stored key of the limit that applies to tasks of `key`
    /// (`tenant:*` for a prefix default).
    pub fn governing(&self, key: &str) -> Option<String> {
        if self.exact.contains_key(key) {
            return Some(key.to_string());
        }
        self.prefixes.iter().find(|(p, _)| key.starts_with(p.as_str())).map(|(p, _)| format!("{p}*"))
    }

    /// The rate that applies to tasks of `key`, if any.
    pub fn rate(&self, key: &str) -> Option<Gcra> {
        self.bound(key).and_then(|b| b.gcra)
    }

    /// Milliseconds from `now_ms` until the soonest of the keys whose rate
    /// held a start back at `since_ms` (`states`: key and stored
    /// theoretical arrival time) admits one again; zero when that moment
    /// has passed by `now_ms` (the rate opened after the claim looked:
    /// claim again now). `None` when no rate held a key back at `since_ms`.
    /// What [`Store::limit_wait`](crate::Store::limit_wait) answers.
    pub fn rate_wait(&self, states: &[(String, i64)], since_ms: i64, now_ms: i64) -> Option<i64> {
        states
            .iter()
            .filter_map(|(key, tat)| {
                let admit = self.rate(key)?.next_admit(Some(*tat), since_ms);
                (admit > since_ms).then(|| (admit - now_ms).max(0))
            })
            .min()
    }
}

/// One key's standing during a claim.
#[derive(Debug, Clone)]
struct KeyState {
    bound: Bound,
    running: u64,
    tat_ms: Option<i64>,
    started: u64,
    /// Another claimer holds the key this round: nothing of it starts.
    held: bool,
}

impl KeyState {
    fn budget(&self, now_ms: i64) -> u64 {
        if self.held {
            return 0;
        }
        let by_count = self.bound.concurrency.map(|c| c.saturating_sub(self.running + self.started));
        let by_rate = self.bound.gcra.map(|g| g.admits(self.tat_ms, now_ms).saturating_sub(self.started));
        by_count.into_iter().chain(by_rate).min().unwrap_or(u64::MAX)
    }
}

/// The admissions of one claim transaction: every start it makes is
/// checked against, and counted toward, its key's limit.
///
/// ```
/// use cairnq_core::backend::Admission;
/// use cairnq_core::store::LimitRow;
/// let mut row = LimitRow::new("tenant:*");
/// row.concurrency = Some(2);
/// let mut admission = Admission::new(&[row], 1_000);
/// admission.observe_running("tenant:1", 1);
/// assert!(admission.try_start(Some("tenant:1")));
/// assert!(!admission.try_start(Some("tenant:1")), "2 running now");
/// assert!(admission.try_start(Some("tenant:2")) && admission.try_start(None));
/// assert_eq!(admission.blocked(), ["tenant:1"]);
/// ```
#[derive(Debug, Clone)]
pub struct Admission {
    book: LimitBook,
    now_ms: i64,
    keys: HashMap<String, KeyState>,
    /// Keys whose queued tasks this claim passed over because of their
    /// limit (not because another claimer held them).
    throttled: BTreeSet<String>,
}

impl Admission {
    /// Admissions under these limits at `now_ms` (the store's clock).
    pub fn new(limits: &[LimitRow], now_ms: i64) -> Self {
        Self { book: LimitBook::new(limits), now_ms, keys: HashMap::new(), throttled: BTreeSet::new() }
    }

    /// The limits in force.
    pub fn book(&self) -> &LimitBook {
        &self.book
    }

    fn state(&mut self, key: &str) -> Option<&mut KeyState> {
        if !self.keys.contains_key(key) {
            let bound = self.book.bound(key)?;
            let fresh = KeyState { bound, running: 0, tat_ms: None, started: 0, held: false };
            self.keys.insert(key.to_string(), fresh);
        }
        self.keys.get_mut(key)
    }

    /// Records that `running` rows of `key` run now (ignored for a key no
    /// limit applies to).
    pub fn observe_running(&mut self, key: &str, running: u64) {
        if let Some(state) = self.state(key) {
            state.running = running;
        }
    }

    /// Records `key`'s stored theoretical arrival time.
    pub fn observe_tat(&mut self, key: &str, tat_ms: Option<i64>) {
        if let Some(state) = self.state(key) {
            state.tat_ms = tat_ms;
        }
    }

    /// Records that another claimer holds `key` this round.
    pub fn hold(&mut self, key: &str) {
        if let Some(state) = self.state(key) {
            state.held = true;
        }
    }

    /// How many more tasks of `key` may start in this claim
    /// (`u64::MAX`: no limit applies).
    pub fn budget(&mut self, key: &str) -> u64 {
        let now_ms = self.now_ms;
        self.state(key).map_or(u64::MAX, |state| state.budget(now_ms))
    }

    /// Starts one task of `key` when its limit allows (a task without a
    /// key, or whose key no limit applies to, always starts); whether it
    /// may.
    pub fn try_start(&mut self, key: Option<&str>) -> bool {
        let now_ms = self.now_ms;
        let Some(key) = key else { return true };
        let Some(state) = self.state(key) else { return true };
        if state.budget(now_ms) == 0 {
            self.pass_over(key);
            return false;
        }
        state.started += 1;
        true
    }

    /// Records that the claim passed over queued tasks of `key` it may not
    /// start: a throttle ([`throttled`](Self::throttled)) when the key's
    /// limit left it no room, nothing when another claimer held it or it
    /// still had room.
    pub fn pass_over(&mut self, key: &str) {
        let now_ms = self.now_ms;
        let at_limit = self.keys.get(key).is_some_and(|s| !s.held && s.budget(now_ms) == 0);
        if at_limit && !self.throttled.contains(key) {
            self.throttled.insert(key.to_string());
        }
    }

    /// The keys this claim passed over because of their limit, each as the
    /// key of the limit that applies (`tenant:*` for a prefix default),
    /// one entry per key passed over, sorted.
    pub fn throttled(&self) -> Vec<String> {
        self.throttled.iter().filter_map(|key| self.book.governing(key)).collect()
    }

    /// Takes back a start [`try_start`](Self::try_start) allowed that did
    /// not happen (the row was gone when claimed).
    pub fn unstart(&mut self, key: &str) {
        if let Some(state) = self.keys.get_mut(key) {
            state.started = state.started.saturating_sub(1);
        }
    }

    /// The keys that may start nothing more in this claim, sorted.
    pub fn blocked(&self) -> Vec<String> {
        let mut keys: Vec<String> =
            self.keys.iter().filter(|(_, s)| s.budget(self.now_ms) == 0).map(|(k, _)| k.clone()).collect();
        keys.sort();
        keys
    }

    /// The rate state to store: each rate-limited key that started tasks,
    /// with its new theoretical arrival time, sorted by key.
    pub fn rate_states(&self) -> Vec<(String, i64)> {
        let mut states: Vec<(String, i64)> = self
            .keys
            .iter()
            .filter(|(_, s)| s.started > 0)
            .filter_map(|(k, s)| s.bound.gcra.map(|g| (k.clone(), g.after(s.tat_ms, self.now_ms, s.started))))
            .collect();
        states.sort();
        states
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, concurrency: Option<i64>, rate: Option<(i64, i64, i64)>) -> LimitRow {
        let mut row = LimitRow::new(key);
        row.concurrency = concurrency;
        if let Some((count, period, burst)) = rate {
            (row.rate_count, row.rate_period_ms, row.burst) = (Some(count), Some(period), Some(burst));
        }
        row
    }

    #[test]
    fn a_rate_that_opened_after_the_claim_waits_zero_not_nothing() {
        // 1 a second, burst 1: a start at 0 holds the next back until 1,000.
        let book = LimitBook::new(&[row("k", None, Some((1, 1_000, 1)))]);
        let states = vec![("k".to_string(), 1_000)];
        assert_eq!(book.rate_wait(&states, 100, 100), Some(900), "held back: wait for the rate");
        assert_eq!(book.rate_wait(&states, 100, 1_500), Some(0), "opened since the claim: claim again now");
        assert_eq!(book.rate_wait(&states, 1_500, 1_500), None, "nothing held back when the claim looked");
        assert_eq!(book.rate_wait(&[("other".to_string(), 9_000)], 100, 100), None, "no rate for the key");
    }

    #[test]
    fn the_exact_limit_wins_then_the_longest_prefix() {
        let rows = [
            row("*", Some(9), None),
            row("t:*", Some(2), None),
            row("t:4*", Some(3), None),
            row("t:42", Some(1), None),
        ];
        let mut a = Admission::new(&rows, 0);
        let starts = |a: &mut Admission, key: &str| (0..10).take_while(|_| a.try_start(Some(key))).count();
        assert_eq!(starts(&mut a, "t:42"), 1);
        assert_eq!(starts(&mut a, "t:43"), 3);
        assert_eq!(starts(&mut a, "t:5"), 2);
        assert_eq!(starts(&mut a, "u"), 9);
        assert_eq!(starts(&mut a, "t:5x"), 2, "each key of a prefix separately");
    }

    #[test]
    fn the_gcra_spaces_starts_and_allows_the_burst() {
        let g = Gcra::new(20, 1_000, 1);
        assert_eq!(g.admits(None, 0), 1);
        let tat = g.after(None, 0, 1);
        assert_eq!(tat, 50);
        assert_eq!(g.admits(Some(tat), 49), 0);
        assert_eq!(g.admits(Some(tat), 50), 1);
        assert_eq!(g.next_admit(Some(tat), 10), 50);
        let burst = Gcra::new(100, 60_000, 10);
        assert_eq!(burst.admits(None, 0), 10);
        assert_eq!(burst.admits(Some(burst.after(None, 0, 10)), 0), 0);
        assert_eq!(Gcra::new(3, 1_000, 3).admits(None, 5), 3);
    }

    #[test]
    fn concurrency_and_rate_both_bound_and_blocked_keys_are_listed() {
        let mut a = Admission::new(&[row("k", Some(3), Some((2, 1_000, 2)))], 100);
        a.observe_running("k", 0);
        assert!(a.try_start(Some("k")) && a.try_start(Some("k")));
        assert!(!a.try_start(Some("k")), "the burst of 2 is spent");
        assert_eq!(a.blocked(), ["k"]);
        assert_eq!(a.rate_states(), [("k".to_string(), 1_100)]);
        a.unstart("k");
        assert!(a.blocked().is_empty());
        let mut held = Admission::new(&[row("k", Some(3), None)], 0);
        held.hold("k");
        assert!(!held.try_start(Some("k")));
        assert!(held.try_start(Some("free")), "no limit applies");
        assert!(held.throttled().is_empty(), "a key another claimer holds is not throttled by its limit");
    }

    #[test]
    fn keys_passed_over_at_their_limit_are_throttled_under_their_limits_key() {
        let mut a = Admission::new(&[row("t:*", Some(1), None), row("solo", Some(5), None)], 0);
        a.observe_running("t:1", 1);
        assert!(!a.try_start(Some("t:1")));
        assert!(!a.try_start(Some("t:1")), "counted once per claim");
        assert!(a.try_start(Some("t:2")));
        a.pass_over("t:2");
        a.pass_over("t:3");
        a.pass_over("solo");
        assert!(a.try_start(Some("solo")), "room left: passing over it was no throttle");
        assert_eq!(a.throttled(), ["t:*", "t:*"], "t:1 and t:2, under the default's key");
    }
}
