//! How long to wait after failures in a row: the first wait, doubled after each further
//! failure, never more than a cap. Every retry loop in hearth waits by it (the chat
//! platforms' calls, polls and syncs, MCP servers' reconnects, the model's calls, a
//! message's retries), so they all back off alike and one unit test says how.
//!
//! `Doubling` is the schedule; `Backoff` counts one loop's failures along it and starts
//! again after a success. A platform that names its own wait (Telegram's `retry_after`, a
//! model's `Retry-After`) is held to the cap by `Doubling::capped`.

use std::time::Duration;

/// Waits of `first`, doubling after each failure, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doubling {
    pub first: Duration,
    pub max: Duration,
}

impl Doubling {
    pub const fn new(first: Duration, max: Duration) -> Self {
        Doubling { first, max }
    }

    /// The wait after `failures` failures in a row: `first` after one (or none).
    pub fn after(&self, failures: u32) -> Duration {
        // 2^20 times any first wait is past every cap hearth uses; no overflow beyond.
        let doublings = failures.saturating_sub(1).min(20);
        self.first.saturating_mul(1 << doublings).min(self.max)
    }

    /// A wait someone else asked for, held to the cap.
    pub fn capped(&self, asked: Duration) -> Duration {
        asked.min(self.max)
    }
}

/// One loop's failures in a row along a `Doubling` schedule.
#[derive(Debug, Clone)]
pub struct Backoff {
    schedule: Doubling,
    failures: u32,
}

impl Backoff {
    pub const fn new(schedule: Doubling) -> Self {
        Backoff {
            schedule,
            failures: 0,
        }
    }

    /// One more failure: how long to wait before trying again.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.schedule.after(self.failures)
    }

    /// The wait the next failure would bring, without counting one.
    pub fn next_wait(&self) -> Duration {
        self.schedule.after(self.failures.saturating_add(1))
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// It worked: the next failure waits the first wait again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    pub fn schedule(&self) -> Doubling {
        self.schedule
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn waits_double_from_the_first_up_to_the_cap_and_start_again_after_a_success() {
        let mut backoff = Backoff::new(Doubling::new(SECOND, 60 * SECOND));
        assert_eq!(backoff.next_wait(), SECOND);
        let waits: Vec<u64> = (0..9).map(|_| backoff.failed().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff.failures(), 9);
        backoff.reset();
        assert_eq!(backoff.failed(), SECOND);
    }

    #[test]
    fn no_count_of_failures_overflows_and_an_asked_wait_is_capped() {
        let schedule = Doubling::new(Duration::from_millis(500), 30 * SECOND);
        assert_eq!(schedule.after(0), Duration::from_millis(500));
        assert_eq!(schedule.after(2), SECOND);
        assert_eq!(schedule.after(u32::MAX), 30 * SECOND);
        assert_eq!(schedule.capped(3600 * SECOND), 30 * SECOND);
        assert_eq!(schedule.capped(3 * SECOND), 3 * SECOND);
        let huge = Doubling::new(Duration::from_secs(u64::MAX / 2), Duration::MAX);
        assert_eq!(huge.after(40), Duration::MAX);
    }
}
