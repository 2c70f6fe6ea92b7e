//! The `WebAccess` port: a sign-in code works once, for its own member only, until it
//! expires, is replaced or locks after too many wrong tries (each counted); a link signs in
//! once; sessions are found by their cookie's hash until they expire and end only as their
//! member asks; tokens are found until revoked; what expired is pruned and nothing else; a
//! cookie or token hash stored twice is refused. On SQLite, two stores on one file (hearth
//! and the command line) see each other's writes at once, and a code raced from both is
//! accepted once.

use hearth::ports::{
    MemberToken, NewSignInCode, SignInAttempt, SignInCheck, SignInTry, WebSession,
};
use hearth::storage::Stores;

use super::{T0, member, open_or_panic, sqlite_url};

adapter_suite!(
    web_access_a_right_code_signs_in_once,
    web_access_wrong_codes_count_down_then_lock,
    web_access_an_expired_code_is_refused,
    web_access_a_new_code_replaces_the_earlier_and_both_count,
    web_access_a_code_signs_in_its_own_member_only,
    web_access_a_link_signs_in_once_in_time,
    web_access_a_session_is_found_by_its_cookie_until_it_expires,
    web_access_a_members_sessions_newest_first,
    web_access_sessions_end_only_as_their_member_asks,
    web_access_a_replayed_session_is_refused,
    web_access_tokens_found_and_listed_until_revoked,
    web_access_prune_removes_only_what_expired,
);

pub(super) const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
/// The wrong tries after which a code locks, as the page would ask.
const MAX_WRONG: u32 = 3;

/// A ten-minute code for `who`, made at `at_ms`.
pub(super) fn code(who: &str, hash: &str, at_ms: i64) -> NewSignInCode {
    NewSignInCode {
        member_id: member(who),
        code_hash: hash.to_string(),
        created_at_ms: at_ms,
        expires_at_ms: at_ms + 10 * MINUTE,
    }
}

/// A try of `hash` for `who` from one address, at `at_ms`.
async fn try_code(stores: &Stores, who: &str, hash: &str, at_ms: i64) -> SignInCheck {
    try_from(stores, who, hash, "192.0.2.1", at_ms).await.check
}

/// A try of `hash` for `who` from `address`, at `at_ms`.
pub(super) async fn try_from(
    stores: &Stores,
    who: &str,
    hash: &str,
    address: &str,
    at_ms: i64,
) -> SignInTry {
    stores
        .web_access
        .try_sign_in_code(&SignInAttempt {
            member_id: member(who),
            code_hash: hash.to_string(),
            address: address.to_string(),
            now_ms: at_ms,
            max_wrong: MAX_WRONG,
        })
        .await
        .unwrap()
}

async fn codes_since(stores: &Stores, who: &str, since_ms: i64) -> u32 {
    let who = member(who);
    stores
        .web_access
        .sign_in_codes_since(&who, since_ms)
        .await
        .unwrap()
}

fn session(id: &str, who: &str, created_at_ms: i64, expires_at_ms: i64) -> WebSession {
    WebSession {
        id: id.to_string(),
        member_id: member(who),
        csrf_token: format!("csrf-{id}"),
        signed_in_with: "telegram".to_string(),
        created_at_ms,
        expires_at_ms,
    }
}

fn token(id: &str, who: &str, label: Option<&str>, created_at_ms: i64) -> MemberToken {
    MemberToken {
        id: id.to_string(),
        member_id: member(who),
        label: label.map(str::to_string),
        created_at_ms,
    }
}

fn session_ids(sessions: &[WebSession]) -> Vec<&str> {
    sessions.iter().map(|session| session.id.as_str()).collect()
}

async fn token_ids(stores: &Stores) -> Vec<String> {
    let tokens = stores.web_access.tokens().await.unwrap();
    tokens.into_iter().map(|token| token.id).collect()
}

async fn web_access_a_right_code_signs_in_once(stores: &Stores) {
    assert_eq!(
        try_code(stores, "alice", "h1", T0).await,
        SignInCheck::NoCode
    );
    let web = &stores.web_access;
    web.put_sign_in_code(&code("alice", "h1", T0))
        .await
        .unwrap();
    assert_eq!(
        try_code(stores, "alice", "h1", T0 + MINUTE).await,
        SignInCheck::Accepted
    );
    // Spent: neither the right code nor a wrong one finds anything to check.
    assert_eq!(
        try_code(stores, "alice", "h1", T0 + 2 * MINUTE).await,
        SignInCheck::NoCode
    );
    assert_eq!(
        try_code(stores, "alice", "h9", T0 + 2 * MINUTE).await,
        SignInCheck::NoCode
    );
}

async fn web_access_wrong_codes_count_down_then_lock(stores: &Stores) {
    let web = &stores.web_access;
    web.put_sign_in_code(&code("alice", "h1", T0))
        .await
        .unwrap();
    for tries_left in [2, 1, 0] {
        assert_eq!(
            try_code(stores, "alice", "wrong", T0 + MINUTE).await,
            SignInCheck::Wrong { tries_left }
        );
    }
    // Locked: the right code opens nothing now, and more wrong ones count no further.
    assert_eq!(
        try_code(stores, "alice", "h1", T0 + 2 * MINUTE).await,
        SignInCheck::Locked
    );
    assert_eq!(
        try_code(stores, "alice", "wrong", T0 + 2 * MINUTE).await,
        SignInCheck::Locked
    );
    // A new code starts with every try again (once the member's hour of wrong tries,
    // `sign_in_limits.rs`, has passed).
    web.put_sign_in_code(&code("alice", "h2", T0 + 2 * HOUR))
        .await
        .unwrap();
    assert_eq!(
        try_code(stores, "alice", "wrong", T0 + 2 * HOUR).await,
        SignInCheck::Wrong { tries_left: 2 }
    );
    assert_eq!(
        try_code(stores, "alice", "h2", T0 + 2 * HOUR).await,
        SignInCheck::Accepted
    );
}

async fn web_access_an_expired_code_is_refused(stores: &Stores) {
    let web = &stores.web_access;
    web.put_sign_in_code(&code("alice", "h1", T0))
        .await
        .unwrap();
    let expiry = T0 + 10 * MINUTE;
    assert_eq!(
        try_code(stores, "alice", "wrong", expiry - 1).await,
        SignInCheck::Wrong { tries_left: 2 }
    );
    assert_eq!(
        try_code(stores, "alice", "h1", expiry).await,
        SignInCheck::Expired
    );
    assert_eq!(
        try_code(stores, "alice", "wrong", expiry + HOUR).await,
        SignInCheck::Expired
    );
}

async fn web_access_a_new_code_replaces_the_earlier_and_both_count(stores: &Stores) {
    let web = &stores.web_access;
    web.put_sign_in_code(&code("alice", "h1", T0))
        .await
        .unwrap();
    web.put_sign_in_code(&code("alice", "h2", T0 + MINUTE))
        .await
        .unwrap();
    // The first code, still in its ten minutes, is now only a wrong code.
    assert_eq!(
        try_code(stores, "alice", "h1", T0 + 2 * MINUTE).await,
        SignInCheck::Wrong { tries_left: 2 }
    );
    assert_eq!(
        try_code(stores, "alice", "h2", T0 + 2 * MINUTE).await,
        SignInCheck::Accepted
    );
    // Replaced and used codes still count for how often codes were sent.
    assert_eq!(codes_since(stores, "alice", T0 - HOUR).await, 2);
    assert_eq!(codes_since(stores, "alice", T0).await, 2);
    assert_eq!(codes_since(stores, "alice", T0 + 1).await, 1);
    assert_eq!(codes_since(stores, "alice", T0 + 2 * MINUTE).await, 0);
    assert_eq!(codes_since(stores, "bob", T0 - HOUR).await, 0);
}

async fn web_access_a_code_signs_in_its_own_member_only(stores: &Stores) {
    let web = &stores.web_access;
    web.put_sign_in_code(&code("alice", "ha", T0))
        .await
        .unwrap();
    // Bob has no code: Alice's opens nothing for him.
    assert_eq!(
        try_code(stores, "bob", "ha", T0 + MINUTE).await,
        SignInCheck::NoCode
    );
    web.put_sign_in_code(&code("bob", "hb", T0 + MINUTE))
        .await
        .unwrap();
    assert_eq!(
        try_code(stores, "bob", "ha", T0 + 2 * MINUTE).await,
        SignInCheck::Wrong { tries_left: 2 }
    );
    // Bob's wrong try counted against his code, not Alice's; her new code left his alone.
    assert_eq!(
        try_code(stores, "alice", "hb", T0 + 2 * MINUTE).await,
        SignInCheck::Wrong { tries_left: 2 }
    );
    assert_eq!(
        try_code(stores, "alice", "ha", T0 + 3 * MINUTE).await,
        SignInCheck::Accepted
    );
    assert_eq!(
        try_code(stores, "bob", "hb", T0 + 3 * MINUTE).await,
        SignInCheck::Accepted
    );
}

async fn web_access_a_link_signs_in_once_in_time(stores: &Stores) {
    let web = &stores.web_access;
    let alice = member("alice");
    web.put_sign_in_link("l1", &alice, T0, T0 + 15 * MINUTE)
        .await
        .unwrap();
    web.put_sign_in_link("l2", &alice, T0, T0 + 15 * MINUTE)
        .await
        .unwrap();
    assert_eq!(
        web.use_sign_in_link("l1", T0 + MINUTE).await.unwrap(),
        Some(alice.clone())
    );
    assert_eq!(web.use_sign_in_link("l1", T0 + MINUTE).await.unwrap(), None);
    // At its expiry the link opens nothing, and not later either.
    assert_eq!(
        web.use_sign_in_link("l2", T0 + 15 * MINUTE).await.unwrap(),
        None
    );
    assert_eq!(web.use_sign_in_link("l2", T0 + DAY).await.unwrap(), None);
    assert_eq!(web.use_sign_in_link("unknown", T0).await.unwrap(), None);
}

async fn web_access_a_session_is_found_by_its_cookie_until_it_expires(stores: &Stores) {
    let web = &stores.web_access;
    let stored = session("s1", "alice", T0, T0 + DAY);
    web.create_session("c1", &stored).await.unwrap();
    assert_eq!(web.session("c1", T0).await.unwrap(), Some(stored.clone()));
    assert_eq!(web.session("c1", T0 + DAY - 1).await.unwrap(), Some(stored));
    assert_eq!(web.session("c1", T0 + DAY).await.unwrap(), None);
    // The public id is no cookie.
    assert_eq!(web.session("s1", T0).await.unwrap(), None);
    assert_eq!(web.session("unknown", T0).await.unwrap(), None);
}

async fn web_access_a_members_sessions_newest_first(stores: &Stores) {
    let web = &stores.web_access;
    let sessions = [
        ("c1", session("s1", "alice", T0, T0 + DAY)),
        ("c2", session("s2", "alice", T0 + 2 * HOUR, T0 + DAY)),
        ("c3", session("s3", "alice", T0 + HOUR, T0 + DAY)),
        // Newest, but over by the time the page lists them.
        ("c4", session("s4", "alice", T0 + 3 * HOUR, T0 + 4 * HOUR)),
        ("c5", session("b1", "bob", T0 + HOUR, T0 + DAY)),
    ];
    for (cookie, session) in &sessions {
        web.create_session(cookie, session).await.unwrap();
    }
    let now = T0 + 5 * HOUR;
    let alices = web.sessions_of(&member("alice"), now).await.unwrap();
    assert_eq!(session_ids(&alices), ["s2", "s3", "s1"]);
    assert_eq!(alices[0], sessions[1].1);
    let bobs = web.sessions_of(&member("bob"), now).await.unwrap();
    assert_eq!(session_ids(&bobs), ["b1"]);
    let carols = web.sessions_of(&member("carol"), now).await.unwrap();
    assert!(carols.is_empty());
}

async fn web_access_sessions_end_only_as_their_member_asks(stores: &Stores) {
    let web = &stores.web_access;
    let (alice, bob) = (member("alice"), member("bob"));
    for (cookie, session) in [
        ("c1", session("s1", "alice", T0, T0 + DAY)),
        ("c2", session("s2", "alice", T0 + 1, T0 + DAY)),
        ("c3", session("s3", "alice", T0 + 2, T0 + DAY)),
        ("c4", session("b1", "bob", T0, T0 + DAY)),
    ] {
        web.create_session(cookie, &session).await.unwrap();
    }
    // Bob cannot sign Alice out by naming her session.
    assert!(!web.end_session(&bob, "s1").await.unwrap());
    assert!(web.session("c1", T0).await.unwrap().is_some());
    assert!(web.end_session(&alice, "s1").await.unwrap());
    assert_eq!(web.session("c1", T0).await.unwrap(), None);
    assert!(!web.end_session(&alice, "s1").await.unwrap());
    assert!(!web.end_session(&alice, "unknown").await.unwrap());

    assert_eq!(web.end_sessions_of(&alice).await.unwrap(), 2);
    assert!(web.sessions_of(&alice, T0).await.unwrap().is_empty());
    assert_eq!(web.session("c2", T0).await.unwrap(), None);
    assert!(web.session("c4", T0).await.unwrap().is_some());
    assert_eq!(web.end_sessions_of(&alice).await.unwrap(), 0);
}

async fn web_access_a_replayed_session_is_refused(stores: &Stores) {
    let web = &stores.web_access;
    let first = session("s1", "alice", T0, T0 + DAY);
    web.create_session("c1", &first).await.unwrap();
    // The same cookie hash for someone else: an error, the first session kept as it was.
    let replay = session("s2", "bob", T0 + 1, T0 + 30 * DAY);
    assert!(web.create_session("c1", &replay).await.is_err());
    assert_eq!(web.session("c1", T0).await.unwrap(), Some(first));
    assert!(
        web.sessions_of(&member("bob"), T0)
            .await
            .unwrap()
            .is_empty()
    );
    // Another cookie under a public id already given is refused too.
    let same_id = session("s1", "bob", T0 + 1, T0 + DAY);
    assert!(web.create_session("c2", &same_id).await.is_err());
    assert_eq!(web.session("c2", T0).await.unwrap(), None);
}

async fn web_access_tokens_found_and_listed_until_revoked(stores: &Stores) {
    let web = &stores.web_access;
    let phone = token("t1", "alice", Some("phone"), T0 + 2);
    web.create_token("k1", &phone).await.unwrap();
    web.create_token("k2", &token("t2", "bob", None, T0))
        .await
        .unwrap();
    web.create_token("k3", &token("t3", "alice", Some("laptop"), T0 + 1))
        .await
        .unwrap();
    assert_eq!(web.token("k1").await.unwrap(), Some(phone.clone()));
    // Found by the key's hash only, never by the public id.
    assert_eq!(web.token("t1").await.unwrap(), None);
    assert_eq!(web.token("unknown").await.unwrap(), None);
    assert_eq!(token_ids(stores).await, ["t2", "t3", "t1"]);
    // The same hash again is an error, the token kept as it was.
    let replay = token("t4", "bob", None, T0 + 3);
    assert!(web.create_token("k1", &replay).await.is_err());
    assert_eq!(web.token("k1").await.unwrap(), Some(phone));

    assert!(web.revoke_token("t3").await.unwrap());
    assert_eq!(web.token("k3").await.unwrap(), None);
    assert_eq!(token_ids(stores).await, ["t2", "t1"]);
    assert!(!web.revoke_token("t3").await.unwrap());
    assert!(!web.revoke_token("unknown").await.unwrap());
}

async fn web_access_prune_removes_only_what_expired(stores: &Stores) {
    let web = &stores.web_access;
    let alice = member("alice");
    web.put_sign_in_code(&code("alice", "ha", T0))
        .await
        .unwrap();
    web.put_sign_in_code(&NewSignInCode {
        expires_at_ms: T0 + 2 * HOUR,
        ..code("bob", "hb", T0)
    })
    .await
    .unwrap();
    web.put_sign_in_link("old", &alice, T0, T0 + 15 * MINUTE)
        .await
        .unwrap();
    web.put_sign_in_link("new", &alice, T0, T0 + DAY)
        .await
        .unwrap();
    let (ended, kept) = (
        session("s1", "alice", T0, T0 + HOUR),
        session("s2", "alice", T0, T0 + 30 * DAY),
    );
    web.create_session("c1", &ended).await.unwrap();
    web.create_session("c2", &kept).await.unwrap();
    let token = token("t1", "alice", None, T0);
    web.create_token("k1", &token).await.unwrap();

    // Alice's code, the old link and the first session expired; nothing else did.
    let before = T0 + 90 * MINUTE;
    assert_eq!(web.prune_expired(before).await.unwrap(), 3);
    assert_eq!(codes_since(stores, "alice", T0).await, 0);
    assert_eq!(codes_since(stores, "bob", T0).await, 1);
    // Asked at a time it was valid, the pruned session is gone all the same.
    assert_eq!(web.session("c1", T0).await.unwrap(), None);
    assert_eq!(web.session("c2", before).await.unwrap(), Some(kept));
    assert_eq!(web.use_sign_in_link("old", T0).await.unwrap(), None);
    assert_eq!(
        web.use_sign_in_link("new", before).await.unwrap(),
        Some(alice.clone())
    );
    assert_eq!(
        try_code(stores, "bob", "hb", before).await,
        SignInCheck::Accepted
    );
    assert_eq!(web.token("k1").await.unwrap(), Some(token));
    assert_eq!(web.prune_expired(before).await.unwrap(), 0);
}

/// Hearth and the command line beside it: two stores on one file, no cache in either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_stores_on_one_file_see_each_others_web_access_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());
    let (hearth, cli) = (open_or_panic(&url).await, open_or_panic(&url).await);
    let alice = member("alice");

    let laptop = token("t1", "alice", Some("laptop"), T0);
    cli.web_access.create_token("k1", &laptop).await.unwrap();
    assert_eq!(hearth.web_access.token("k1").await.unwrap(), Some(laptop));
    assert!(cli.web_access.revoke_token("t1").await.unwrap());
    assert_eq!(hearth.web_access.token("k1").await.unwrap(), None);

    cli.web_access
        .put_sign_in_link("l1", &alice, T0, T0 + HOUR)
        .await
        .unwrap();
    let used = hearth.web_access.use_sign_in_link("l1", T0 + 1).await;
    assert_eq!(used.unwrap(), Some(alice.clone()));
    let again = cli.web_access.use_sign_in_link("l1", T0 + 2).await;
    assert_eq!(again.unwrap(), None);

    // The right code typed on both at once opens one session.
    hearth
        .web_access
        .put_sign_in_code(&code("alice", "h1", T0))
        .await
        .unwrap();
    let tries: Vec<_> = (0..8)
        .map(|n| {
            let stores = if n % 2 == 0 { &hearth } else { &cli };
            let web = stores.web_access.clone();
            let alice = alice.clone();
            tokio::spawn(async move {
                let attempt = SignInAttempt {
                    member_id: alice,
                    code_hash: "h1".into(),
                    address: format!("192.0.2.{n}"),
                    now_ms: T0 + MINUTE,
                    max_wrong: MAX_WRONG,
                };
                web.try_sign_in_code(&attempt).await.unwrap().check
            })
        })
        .collect();
    let mut checks = Vec::new();
    for try_ in tries {
        checks.push(try_.await.unwrap());
    }
    let accepted = checks
        .iter()
        .filter(|check| **check == SignInCheck::Accepted)
        .count();
    assert_eq!(accepted, 1, "{checks:?}");
    assert!(
        checks.iter().all(|check| matches!(
            check,
            SignInCheck::Accepted | SignInCheck::NoCode | SignInCheck::Limited(_)
        )),
        "{checks:?}"
    );
    hearth.close().await;
    cli.close().await;
}
