//! The `WebAccess` port counting wrong sign-in codes in the database: per member across
//! their codes, per client address across members, and overall; past a limit no code is
//! checked (the right one neither) until it lifts, the try that starts a lock says so, and
//! a day later everything counts afresh.

use hearth::ports::{
    LockScope, SIGN_IN_LIMITS_OVERALL, SIGN_IN_LIMITS_PER_ADDRESS, SIGN_IN_LIMITS_PER_MEMBER,
    SignInCheck,
};
use hearth::storage::Stores;

use super::T0;
use super::web_access::{MINUTE, code, try_from};

adapter_suite!(
    sign_in_limits_per_member_across_codes_and_addresses,
    sign_in_limits_per_address_across_members,
    sign_in_limits_overall_from_everyone,
);

const HOUR: i64 = 60 * MINUTE;

/// A new open code for `who` at `at_ms`, its hash `hash`.
async fn open_code(stores: &Stores, who: &str, hash: &str, at_ms: i64) {
    stores
        .web_access
        .put_sign_in_code(&code(who, hash, at_ms))
        .await
        .unwrap();
}

async fn sign_in_limits_per_member_across_codes_and_addresses(stores: &Stores) {
    let per_hour = SIGN_IN_LIMITS_PER_MEMBER[0].max as i64;
    // Wrong tries for alice from ever new addresses, a new code each time.
    for n in 0..per_hour {
        open_code(stores, "alice", &format!("right-{n}"), T0 + n).await;
        let tried = try_from(stores, "alice", "wrong", &format!("198.51.100.{n}"), T0 + n).await;
        assert!(
            matches!(tried.check, SignInCheck::Wrong { .. }),
            "{tried:?}"
        );
        let locks = tried.locked_now.map(|locked| locked.scope);
        if n + 1 == per_hour {
            assert_eq!(locks, Some(LockScope::Member), "the try that locks says so");
        } else {
            assert_eq!(locks, None, "try {n}");
        }
    }
    // Now even the right code is not checked, from anywhere, until the hour passed.
    open_code(stores, "alice", "right", T0 + 10 * MINUTE).await;
    let locked = try_from(stores, "alice", "right", "203.0.113.1", T0 + 10 * MINUTE).await;
    let SignInCheck::Limited(lock) = locked.check else {
        panic!("expected a lock: {locked:?}");
    };
    assert_eq!(lock.scope, LockScope::Member);
    assert_eq!(lock.until_ms, T0 + HOUR);
    assert_eq!(locked.locked_now, None, "told once, when it started");
    // Another member is not locked by alice's tries.
    open_code(stores, "bob", "bobs", T0 + 10 * MINUTE).await;
    let bob = try_from(stores, "bob", "bobs", "203.0.113.2", T0 + 10 * MINUTE).await;
    assert_eq!(bob.check, SignInCheck::Accepted);
    // An hour later alice's right code works again.
    open_code(stores, "alice", "later", T0 + HOUR).await;
    let later = try_from(stores, "alice", "later", "203.0.113.1", T0 + HOUR).await;
    assert_eq!(later.check, SignInCheck::Accepted);
    // The day's limit: after it, a lock until a day after the first try.
    let per_day = SIGN_IN_LIMITS_PER_MEMBER[1].max as i64;
    for n in per_hour..per_day {
        let at = T0 + 2 * HOUR + n;
        open_code(stores, "alice", &format!("r{n}"), at).await;
        try_from(stores, "alice", "wrong", &format!("198.51.100.{n}"), at).await;
    }
    open_code(stores, "alice", "right-4h", T0 + 4 * HOUR).await;
    let tried = try_from(stores, "alice", "right-4h", "203.0.113.1", T0 + 4 * HOUR).await;
    let SignInCheck::Limited(lock) = tried.check else {
        panic!("expected the day's lock: {tried:?}");
    };
    assert_eq!(lock.until_ms, T0 + 24 * HOUR);
    open_code(stores, "alice", "next-day", T0 + 25 * HOUR).await;
    let next_day = try_from(stores, "alice", "next-day", "203.0.113.1", T0 + 25 * HOUR).await;
    assert_eq!(next_day.check, SignInCheck::Accepted);
}

async fn sign_in_limits_per_address_across_members(stores: &Stores) {
    let per_hour = SIGN_IN_LIMITS_PER_ADDRESS[0].max as i64;
    // One address guessing for a different member each time: no member reaches a limit.
    for n in 0..per_hour {
        let who = format!("member-{n}");
        open_code(stores, &who, "right", T0 + n).await;
        let tried = try_from(stores, &who, "wrong", "192.0.2.66", T0 + n).await;
        assert!(
            matches!(tried.check, SignInCheck::Wrong { .. }),
            "{tried:?}"
        );
    }
    open_code(stores, "carol", "right", T0 + MINUTE).await;
    let from_there = try_from(stores, "carol", "right", "192.0.2.66", T0 + MINUTE).await;
    let SignInCheck::Limited(lock) = from_there.check else {
        panic!("expected the address's lock: {from_there:?}");
    };
    assert_eq!(lock.scope, LockScope::Source);
    // Carol herself, from her own address, is not.
    let own = try_from(stores, "carol", "right", "203.0.113.3", T0 + MINUTE).await;
    assert_eq!(own.check, SignInCheck::Accepted);
}

async fn sign_in_limits_overall_from_everyone(stores: &Stores) {
    let overall = SIGN_IN_LIMITS_OVERALL[0].max as i64;
    // Each member and each address within its own limits, hours apart.
    for n in 0..overall {
        let who = format!("member-{}", n % 4);
        let at = T0 + (n / 4) * 2 * HOUR + n;
        open_code(stores, &who, &format!("right-{n}"), at).await;
        let tried = try_from(stores, &who, "wrong", &format!("198.51.100.{n}"), at).await;
        assert!(
            matches!(tried.check, SignInCheck::Wrong { .. }),
            "try {n}: {tried:?}"
        );
        if n + 1 == overall {
            assert_eq!(
                tried.locked_now.map(|locked| locked.scope),
                Some(LockScope::Everyone)
            );
        }
    }
    let at = T0 + 11 * HOUR;
    open_code(stores, "dave", "right", at).await;
    let tried = try_from(stores, "dave", "right", "203.0.113.4", at).await;
    let SignInCheck::Limited(lock) = tried.check else {
        panic!("expected everyone's lock: {tried:?}");
    };
    assert_eq!(lock.scope, LockScope::Everyone);
    assert_eq!(lock.until_ms, T0 + 24 * HOUR);
}
