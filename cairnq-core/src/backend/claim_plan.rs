//! The budget bookkeeping of one claim transaction: how many rows each
//! draw may take, given what earlier draws took from the budgets they
//! share. Every SQL backend runs its draws through it (see
//! `cairnq_sql::flows::claim`).

use crate::store::ClaimParams;

impl ClaimParams {
    /// The budget bookkeeping backends use while running the draws.
    ///
    /// ```
    /// use cairnq_core::store::{ClaimDraw, ClaimParams};
    /// let q = vec!["default".to_string()];
    /// let p = ClaimParams::new("w", 1000)
    ///     .draw(ClaimDraw::new(q.clone()).limit(5).spending(vec![0]))
    ///     .draw(ClaimDraw::new(q).limit(5).spending(vec![0]))
    ///     .budgets(vec![7]);
    /// let mut plan = p.plan();
    /// assert_eq!(plan.limit(0), 5);
    /// plan.took(0, 5);
    /// assert_eq!(plan.limit(1), 2);
    /// ```
    pub fn plan(&self) -> DrawPlan<'_> {
        DrawPlan { params: self, remaining: self.budgets.clone() }
    }
}

/// Tracks what each shared budget has left during one claim transaction.
#[derive(Debug)]
pub struct DrawPlan<'a> {
    params: &'a ClaimParams,
    remaining: Vec<u32>,
}

impl DrawPlan<'_> {
    /// How many rows draw `index` may take now.
    pub fn limit(&self, index: usize) -> u32 {
        let Some(draw) = self.params.draws.get(index) else { return 0 };
        if draw.names.as_ref().is_some_and(Vec::is_empty) || draw.queues.is_empty() {
            return 0;
        }
        draw.budgets.iter().map(|&b| self.remaining.get(b).copied().unwrap_or(0)).fold(draw.limit, u32::min)
    }

    /// Records that draw `index` took `count` rows.
    pub fn took(&mut self, index: usize, count: usize) {
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        if let Some(draw) = self.params.draws.get(index) {
            for &b in &draw.budgets {
                if let Some(left) = self.remaining.get_mut(b) {
                    *left = left.saturating_sub(count);
                }
            }
        }
    }
}
