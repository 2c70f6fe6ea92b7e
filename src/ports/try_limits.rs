//! Wrong tries counted in windows of time: how many a code may be guessed, kept in the
//! database so that every worker counts the same tries. A limit is `max` wrong tries
//! `within` a window; a scope (one member, one address, one chat account, everyone) may
//! have several, a short and a long one, so that a lockout grows: an hour after the
//! first few, a day after more. The adapters read the tries of the longest window and
//! store each new one; what they mean is decided here, once.

/// At most `max` wrong tries within `within_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub max: u32,
    pub within_ms: i64,
}

impl Limit {
    pub const fn new(max: u32, within_ms: i64) -> Limit {
        Limit { max, within_ms }
    }
}

/// Who a lock holds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockScope {
    /// The one member (sign-in codes typed for them, from anywhere).
    Member,
    /// The one client address, or chat account, trying.
    Source,
    /// Everyone: too many wrong tries overall.
    Everyone,
}

impl LockScope {
    pub fn as_str(self) -> &'static str {
        match self {
            LockScope::Member => "member",
            LockScope::Source => "source",
            LockScope::Everyone => "everyone",
        }
    }
}

/// Tries are refused for `scope` until `until_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locked {
    pub scope: LockScope,
    pub until_ms: i64,
}

/// Until when `limits` refuse a new try, given the times of the wrong tries so far (any
/// order); `None` when one is allowed at `now_ms`. The lock lifts when enough of the tries
/// have left their window for the count to be under `max` again.
pub fn locked_until(times: &[i64], limits: &[Limit], now_ms: i64) -> Option<i64> {
    let mut until = None;
    for limit in limits {
        let mut within: Vec<i64> = times
            .iter()
            .copied()
            .filter(|at| *at > now_ms - limit.within_ms)
            .collect();
        let max = usize::try_from(limit.max).unwrap_or(usize::MAX);
        if within.len() < max {
            continue;
        }
        within.sort_unstable();
        // This many must leave the window before another try is allowed.
        let leaving = within.len() - max;
        let lifts = within[leaving] + limit.within_ms;
        until = Some(until.map_or(lifts, |earlier: i64| earlier.max(lifts)));
    }
    until
}

/// The lock of `scopes` (each its tries' times and its limits) at `now_ms` lasting
/// longest; of locks lasting as long, the one of the scope listed first.
pub fn first_lock(scopes: &[(LockScope, Vec<i64>, &[Limit])], now_ms: i64) -> Option<Locked> {
    scopes
        .iter()
        .filter_map(|(scope, times, limits)| {
            locked_until(times, limits, now_ms).map(|until_ms| Locked {
                scope: *scope,
                until_ms,
            })
        })
        .fold(None, |longest: Option<Locked>, locked| match longest {
            Some(longest) if longest.until_ms >= locked.until_ms => Some(longest),
            _ => Some(locked),
        })
}

/// The longest window of `limits`: the tries older than it count no more.
pub fn longest_window(limits: &[&[Limit]]) -> i64 {
    limits
        .iter()
        .flat_map(|limits| limits.iter())
        .map(|limit| limit.within_ms)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn a_short_lock_then_a_longer_one() {
        let limits = [Limit::new(3, HOUR), Limit::new(5, 24 * HOUR)];
        assert_eq!(locked_until(&[], &limits, 0), None);
        let tries = [10, 20, 30];
        // Three within the hour: until the first leaves it.
        assert_eq!(locked_until(&tries, &limits, 40), Some(10 + HOUR));
        assert_eq!(locked_until(&tries, &limits, 10 + HOUR), None);
        // Five within the day: until the first of them leaves the day.
        let tries = [10, 20, 30, 2 * HOUR, 2 * HOUR + 1];
        assert_eq!(
            locked_until(&tries, &limits, 3 * HOUR),
            Some(10 + 24 * HOUR)
        );
        // Tries older than the day count no more.
        assert_eq!(locked_until(&tries, &limits, 25 * HOUR), None);
    }

    #[test]
    fn more_tries_than_the_limit_lock_until_enough_have_left() {
        let limits = [Limit::new(2, 100)];
        assert_eq!(locked_until(&[1, 2, 3, 4], &limits, 50), Some(3 + 100));
    }

    #[test]
    fn the_longest_lock_of_the_scopes_is_told() {
        let member = [Limit::new(1, 100)];
        let everyone = [Limit::new(2, 1000)];
        let scopes = [
            (LockScope::Member, vec![10], &member[..]),
            (LockScope::Everyone, vec![5, 10], &everyone[..]),
        ];
        assert_eq!(
            first_lock(&scopes, 20),
            Some(Locked {
                scope: LockScope::Everyone,
                until_ms: 1005
            })
        );
        assert_eq!(longest_window(&[&member, &everyone]), 1000);
    }
}
