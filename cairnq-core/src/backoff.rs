//! Retry backoff with equal jitter, the schedule every cairnq SDK uses.
//!
//! The randomness is injectable so tests can pin the exact delay.

use std::time::Duration;

/// Equal-jitter exponential backoff: for attempt `n` the window is
/// `min(cap, base * 2^(n-1))` and the delay is uniform in `[window/2, window)`.
/// A base of zero disables backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base_ms: u64,
    cap_ms: u64,
}

impl Default for Backoff {
    /// Base 1 s, cap 30 s.
    fn default() -> Self {
        Self { base_ms: 1_000, cap_ms: 30_000 }
    }
}

impl Backoff {
    /// A schedule with the given base and cap.
    pub fn new(base: Duration, cap: Duration) -> Self {
        Self { base_ms: duration_ms(base), cap_ms: duration_ms(cap) }
    }

    /// The window for an attempt (1-based; 0 counts as 1).
    ///
    /// ```
    /// use std::time::Duration;
    /// use cairnq_core::Backoff;
    /// let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    /// assert_eq!(b.window(1), Duration::from_secs(1));
    /// assert_eq!(b.window(3), Duration::from_secs(4));
    /// assert_eq!(b.window(40), Duration::from_secs(30));
    /// ```
    pub fn window(&self, attempt: u32) -> Duration {
        Duration::from_millis(self.window_ms(attempt))
    }

    /// The delay for an attempt, drawing from `uniform_below(n)`, which must
    /// return a value in `[0, n)`: the offset into the window's upper half,
    /// in milliseconds (the resolution the store keeps times in).
    ///
    /// ```
    /// use std::time::Duration;
    /// use cairnq_core::Backoff;
    /// let b = Backoff::default();
    /// assert_eq!(b.delay_with(2, |_| 0), Duration::from_secs(1)); // window 2 s: lower edge
    /// assert_eq!(b.delay_with(2, |n| n - 1), Duration::from_millis(1999)); // upper edge
    /// ```
    pub fn delay_with(&self, attempt: u32, uniform_below: impl FnOnce(u64) -> u64) -> Duration {
        let window = self.window_ms(attempt);
        let floor = window / 2;
        let spread = window - floor;
        let ms = if spread == 0 { floor } else { floor + uniform_below(spread).min(spread - 1) };
        Duration::from_millis(ms)
    }

    /// The delay for an attempt, with process-wide randomness.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_with(attempt, |n| fastrand::u64(0..n))
    }

    fn window_ms(&self, attempt: u32) -> u64 {
        let doublings = attempt.max(1) - 1;
        let grown = if doublings >= 63 { u64::MAX } else { self.base_ms.saturating_mul(1 << doublings) };
        grown.min(self.cap_ms)
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
