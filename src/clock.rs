//! The wall clock: every read of the date and time in hearth goes through here
//! (`now`, `now_ms`, `system_now`). Milliseconds since the Unix epoch are the one time
//! format stored everywhere; expiries, retries, time-to-lives and retention compare them
//! with `now_ms()`.
//!
//! In production each read is the system clock (`chrono::Utc::now()`), never a monotonic
//! clock: a laptop that slept through a confirmation's deadline sees it passed when it
//! wakes.
//!
//! The seam for tests: timers run on tokio's clock, which a test pauses and advances
//! (`start_paused`, `tokio::time::advance`), while the wall clock goes on at its own pace,
//! so a timer firing at a deadline would find the deadline not yet reached. On a thread
//! where a test holds `follow_tokio_clock()`'s guard, a read is the wall time when the
//! guard was made plus how far tokio's clock has moved since: expiries, backoffs and
//! time-to-lives then play out in an instant and always the same way. Install it on the
//! thread that runs the actors (a current-thread runtime's, or the actix System's); other
//! threads keep the system clock. Nothing in hearth installs it.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};

thread_local! {
    /// While a guard lives on this thread: the wall time (ms) and tokio's instant when it
    /// was made.
    static FOLLOWED: Cell<Option<(i64, tokio::time::Instant)>> = const { Cell::new(None) };
}

/// Now, as a date and time in UTC.
pub fn now() -> DateTime<Utc> {
    match FOLLOWED.with(Cell::get) {
        None => Utc::now(),
        Some((wall_ms, since)) => {
            let moved = i64::try_from(since.elapsed().as_millis()).unwrap_or(i64::MAX);
            DateTime::from_timestamp_millis(wall_ms.saturating_add(moved))
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        }
    }
}

/// Milliseconds since the Unix epoch: the one time format stored everywhere.
pub fn now_ms() -> i64 {
    now().timestamp_millis()
}

/// Now as a `SystemTime`, to compare with files' modification times and with dates a
/// server sends.
pub fn system_now() -> SystemTime {
    if FOLLOWED.with(Cell::get).is_none() {
        return SystemTime::now();
    }
    let millis = u64::try_from(now_ms()).unwrap_or(0);
    UNIX_EPOCH + Duration::from_millis(millis)
}

/// Make this thread's reads follow tokio's clock until the guard is dropped (tests: see
/// the module doc). Call it inside the runtime whose clock the test moves.
pub fn follow_tokio_clock() -> FollowTokioClock {
    let previous = FOLLOWED.with(Cell::get);
    let wall_ms = Utc::now().timestamp_millis();
    FOLLOWED.with(|followed| followed.set(Some((wall_ms, tokio::time::Instant::now()))));
    FollowTokioClock {
        previous,
        _this_thread: PhantomData,
    }
}

/// Keeps this thread's wall clock following tokio's; dropping it restores what was before.
#[must_use = "the wall clock follows tokio's only while the guard lives"]
pub struct FollowTokioClock {
    previous: Option<(i64, tokio::time::Instant)>,
    /// The setting belongs to the thread that made it: the guard must not move.
    _this_thread: PhantomData<*const ()>,
}

impl Drop for FollowTokioClock {
    fn drop(&mut self) {
        let previous = self.previous;
        FOLLOWED.with(|followed| followed.set(previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_followed_clock_moves_with_tokio_and_only_while_the_guard_lives() {
        let before = Utc::now().timestamp_millis();
        let guard = follow_tokio_clock();
        let start = now_ms();
        assert!(start >= before);
        tokio::time::advance(Duration::from_secs(3 * 24 * 3600)).await;
        assert_eq!(now_ms() - start, 3 * 24 * 3600 * 1000);
        let system = system_now().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(i64::try_from(system.as_millis()).unwrap(), now_ms());
        drop(guard);
        // The system clock again: days behind what the followed clock said.
        assert!(now_ms() < start + 24 * 3600 * 1000);
    }

    #[test]
    fn without_a_guard_it_is_the_system_clock() {
        let before = Utc::now().timestamp_millis();
        let read = now_ms();
        let after = Utc::now().timestamp_millis();
        assert!((before..=after).contains(&read));
    }
}
