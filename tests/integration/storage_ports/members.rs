//! The `Members` port: a code adds a member once (used, expired and unknown codes refused
//! alike), a link code gives an existing member another account, an account belongs to
//! one member only, the ids offered are taken in order, a removed member's open codes go
//! with them; and, on SQLite, members and used codes kept across a restart.

use hearth::ids::FamilyRole;
use hearth::ports::{
    ConfiguredMembers, InvitePurpose, MemberChange, MemberChangeKind, MemberToken, NewInvite,
    PlatformUser, Redeem, RedeemRefused, Redeemed, StoredMember, WebSession,
};
use hearth::storage::Stores;

use super::{T0, member, open_or_panic, sqlite_url};

adapter_suite!(
    members_a_code_adds_one_member_once,
    members_expired_and_unknown_codes_are_refused,
    members_a_link_code_gives_a_member_another_account,
    members_an_account_belongs_to_one_member,
    members_take_the_first_free_id,
    members_removed_with_their_open_codes,
    members_removed_lose_their_sessions_and_tokens,
    members_a_web_visitor_joins_without_an_account,
);

pub(super) const HOUR: i64 = 3_600_000;

/// The configuration of these checks: alice, a parent.
pub(super) fn configured() -> ConfiguredMembers {
    ConfiguredMembers(vec![(member("alice"), FamilyRole::Parent)])
}

/// Store `invite` as the configuration of these checks allows.
pub(super) async fn create(stores: &Stores, invite: &NewInvite) {
    create_with(stores, invite, &configured()).await;
}

/// Store `invite` with `configured` as the configuration; it must be allowed.
pub(super) async fn create_with(
    stores: &Stores,
    invite: &NewInvite,
    configured: &ConfiguredMembers,
) {
    stores
        .members
        .create_invite(invite, configured)
        .await
        .unwrap()
        .unwrap_or_else(|refused| panic!("{invite:?} refused: {refused}"));
}

/// `target` changed by `by` (`None`: the command line) with alice configured.
pub(super) fn change(by: Option<&str>, target: &str, kind: MemberChangeKind) -> MemberChange {
    MemberChange {
        by: by.map(member),
        target: member(target),
        kind,
        configured: configured(),
        at_ms: T0,
    }
}

pub(super) fn join_invite(
    hash: &str,
    role: FamilyRole,
    name: Option<&str>,
    by: Option<&str>,
) -> NewInvite {
    NewInvite {
        code_hash: hash.to_string(),
        purpose: InvitePurpose::Join {
            role,
            name: name.map(str::to_string),
        },
        created_by: by.map(member),
        created_at_ms: T0,
        expires_at_ms: T0 + 24 * HOUR,
    }
}

/// `user` redeems code `hash`, calling themselves "Given".
pub(super) fn redeem(hash: &str, user: PlatformUser, at_ms: i64) -> Redeem {
    Redeem {
        code_hash: hash.to_string(),
        source: user.key(),
        user,
        configured: ConfiguredMembers::default(),
        name: Some("Given".to_string()),
        at_ms,
    }
}

pub(super) async fn joined(stores: &Stores, redeem: &Redeem) -> StoredMember {
    match stores.members.redeem(redeem).await.unwrap() {
        Ok(Redeemed::Joined { member, .. }) => member,
        other => panic!("expected a new member, got {other:?}"),
    }
}

async fn members_a_code_adds_one_member_once(stores: &Stores) {
    let invite = join_invite("h1", FamilyRole::Child, Some("Max"), Some("alice"));
    create(stores, &invite).await;
    assert_eq!(
        stores.members.open_invites_until(T0).await.unwrap(),
        Some(T0 + 24 * HOUR)
    );
    let first = redeem("h1", PlatformUser::Telegram(42), T0 + HOUR);
    match stores.members.redeem(&first).await.unwrap() {
        Ok(Redeemed::Joined {
            member: max,
            invited_by,
        }) => {
            assert_eq!(invited_by, Some(member("alice")));
            // The invite's name wins over the one given at joining, and gives the id.
            assert_eq!(max.id, member("max"));
            assert_eq!(max.name.as_deref(), Some("Max"));
            assert_eq!(max.role, FamilyRole::Child);
            assert_eq!(max.telegram_user_id, Some(42));
            assert_eq!(max.added_by, Some(member("alice")));
        }
        other => panic!("expected a new member, got {other:?}"),
    }
    // Used: refused as any wrong code is, by anyone.
    for user in [PlatformUser::Telegram(42), PlatformUser::Telegram(43)] {
        let again = redeem("h1", user, T0 + HOUR);
        assert_eq!(
            stores.members.redeem(&again).await.unwrap(),
            Err(RedeemRefused::NoSuchCode)
        );
    }
    assert_eq!(stores.members.open_invites_until(T0).await.unwrap(), None);
    let stored = stores.members.stored_members().await.unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");
}

async fn members_expired_and_unknown_codes_are_refused(stores: &Stores) {
    let invite = join_invite("h2", FamilyRole::Parent, None, None);
    create_with(stores, &invite, &ConfiguredMembers::default()).await;
    let late = redeem("h2", PlatformUser::Telegram(7), T0 + 24 * HOUR);
    assert_eq!(
        stores.members.redeem(&late).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    assert_eq!(
        stores
            .members
            .open_invites_until(T0 + 24 * HOUR)
            .await
            .unwrap(),
        None
    );
    let unknown = redeem("nope", PlatformUser::Telegram(7), T0);
    assert_eq!(
        stores.members.redeem(&unknown).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    assert!(stores.members.stored_members().await.unwrap().is_empty());
    // A code still valid works; the joiner's name is used when the invite gave none (and
    // so is their id), and set-up's code names no inviter.
    let bob = joined(
        stores,
        &redeem("h2", PlatformUser::Matrix("@bob:x".into()), T0 + 1),
    )
    .await;
    assert_eq!(bob.name.as_deref(), Some("Given"));
    assert_eq!(bob.id, member("given"));
    assert_eq!(bob.role, FamilyRole::Parent);
    assert_eq!(bob.added_by, None);
    assert_eq!(bob.matrix_user_id.as_deref(), Some("@bob:x"));
}

async fn members_a_link_code_gives_a_member_another_account(stores: &Stores) {
    // A member of the configuration has no row until they link an account.
    let link = NewInvite {
        purpose: InvitePurpose::Link {
            member: member("alice"),
            role: FamilyRole::Parent,
            name: Some("Alice".into()),
        },
        ..join_invite("h3", FamilyRole::Child, None, Some("alice"))
    };
    create(stores, &link).await;
    // A link code opens no room invites.
    assert_eq!(stores.members.open_invites_until(T0).await.unwrap(), None);
    let linked = redeem("h3", PlatformUser::Matrix("@alice:x".into()), T0 + 1);
    match stores.members.redeem(&linked).await.unwrap() {
        Ok(Redeemed::Linked(alice)) => {
            assert_eq!(alice.id, member("alice"));
            assert_eq!(alice.matrix_user_id.as_deref(), Some("@alice:x"));
            assert_eq!(alice.role, FamilyRole::Parent);
        }
        other => panic!("expected a link, got {other:?}"),
    }
    // A second link keeps the first account.
    let telegram = NewInvite {
        code_hash: "h4".into(),
        ..link.clone()
    };
    create(stores, &telegram).await;
    let again = redeem("h4", PlatformUser::Telegram(1001), T0 + 2);
    let Ok(Redeemed::Linked(alice)) = stores.members.redeem(&again).await.unwrap() else {
        panic!("expected a link");
    };
    assert_eq!(alice.matrix_user_id.as_deref(), Some("@alice:x"));
    assert_eq!(alice.telegram_user_id, Some(1001));
}

async fn members_an_account_belongs_to_one_member(stores: &Stores) {
    for hash in ["h5", "h6"] {
        let invite = join_invite(hash, FamilyRole::Child, None, Some("alice"));
        create(stores, &invite).await;
    }
    joined(stores, &redeem("h5", PlatformUser::Telegram(9), T0 + 1)).await;
    let twice = redeem("h6", PlatformUser::Telegram(9), T0 + 2);
    assert_eq!(
        stores.members.redeem(&twice).await.unwrap(),
        Err(RedeemRefused::AlreadyMember)
    );
    // The refused code was not used.
    joined(stores, &redeem("h6", PlatformUser::Telegram(10), T0 + 3)).await;
    // Linking an account of one member to another is refused too.
    let link = NewInvite {
        purpose: InvitePurpose::Link {
            member: member("given-2"),
            role: FamilyRole::Child,
            name: None,
        },
        ..join_invite("h7", FamilyRole::Child, None, Some("given-2"))
    };
    create(stores, &link).await;
    let stolen = redeem("h7", PlatformUser::Telegram(9), T0 + 4);
    assert_eq!(
        stores.members.redeem(&stolen).await.unwrap(),
        Err(RedeemRefused::AlreadyMember)
    );
}

async fn members_take_the_first_free_id(stores: &Stores) {
    for hash in ["h8", "h9", "h10"] {
        let invite = join_invite(hash, FamilyRole::Child, None, Some("alice"));
        create(stores, &invite).await;
    }
    let named = |hash: &str, user: i64, name: &str, reserved: &[&str]| Redeem {
        name: Some(name.to_string()),
        configured: ConfiguredMembers(
            reserved
                .iter()
                .map(|id| (member(id), FamilyRole::Child))
                .collect(),
        ),
        ..redeem(hash, PlatformUser::Telegram(user), T0)
    };
    // From the name; the next free one when it is taken or reserved.
    let first = joined(stores, &named("h8", 1, "Max Müller", &[])).await;
    let second = joined(stores, &named("h9", 2, "Max Müller", &[])).await;
    assert_eq!(first.id, member("max-müller"));
    assert_eq!(second.id, member("max-müller-2"));
    // A name of nothing but signs: from the account.
    let third = joined(stores, &named("h10", 3, "!!", &["telegram-3"])).await;
    assert_eq!(third.id, member("telegram-3-2"));
}

async fn members_removed_with_their_open_codes(stores: &Stores) {
    let invite = join_invite("h11", FamilyRole::Parent, Some("Bob"), None);
    create_with(stores, &invite, &ConfiguredMembers::default()).await;
    let bob = joined(stores, &redeem("h11", PlatformUser::Telegram(5), T0)).await;
    let by_bob = join_invite("h12", FamilyRole::Child, None, Some("bob"));
    create(stores, &by_bob).await;
    let mut changed = bob.clone();
    changed.role = FamilyRole::Child;
    let to_child = change(None, "bob", MemberChangeKind::SetRole(FamilyRole::Child));
    assert_eq!(
        stores.members.change_member(&to_child).await.unwrap(),
        Ok(changed.clone())
    );
    assert_eq!(
        stores.members.stored_members().await.unwrap(),
        vec![changed.clone()]
    );
    let removal = change(None, "bob", MemberChangeKind::Remove);
    assert_eq!(
        stores.members.change_member(&removal).await.unwrap(),
        Ok(changed.clone())
    );
    assert_eq!(
        stores.members.change_member(&removal).await.unwrap(),
        Err(hearth::ports::ChangeRefused::NoSuchMember)
    );
    assert!(stores.members.stored_members().await.unwrap().is_empty());
    // The code bob asked for went with him.
    let late = redeem("h12", PlatformUser::Telegram(6), T0 + 1);
    assert_eq!(
        stores.members.redeem(&late).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    // The account is free again: a new code makes them a member anew.
    let anew = join_invite("h13", FamilyRole::Child, None, Some("alice"));
    create(stores, &anew).await;
    joined(stores, &redeem("h13", PlatformUser::Telegram(5), T0 + 2)).await;
}

async fn members_removed_lose_their_sessions_and_tokens(stores: &Stores) {
    let invite = join_invite("h21", FamilyRole::Child, Some("Max"), None);
    create_with(stores, &invite, &ConfiguredMembers::default()).await;
    let max = joined(stores, &redeem("h21", PlatformUser::Telegram(8), T0)).await;
    let session = WebSession {
        id: "s1".into(),
        member_id: max.id.clone(),
        csrf_token: "c".into(),
        signed_in_with: "telegram".into(),
        created_at_ms: T0,
        expires_at_ms: T0 + 24 * HOUR,
    };
    let access = &stores.web_access;
    access.create_session("cookie-max", &session).await.unwrap();
    let token = MemberToken {
        id: "t1".into(),
        member_id: max.id.clone(),
        label: None,
        created_at_ms: T0,
    };
    access.create_token("token-max", &token).await.unwrap();
    access
        .put_sign_in_link("link-max", &max.id, T0, T0 + HOUR)
        .await
        .unwrap();
    // Someone else's stay.
    let alice = member("alice");
    access
        .create_session(
            "cookie-alice",
            &WebSession {
                id: "s2".into(),
                member_id: alice.clone(),
                ..session.clone()
            },
        )
        .await
        .unwrap();
    let removal = change(None, max.id.as_str(), MemberChangeKind::Remove);
    assert!(
        stores
            .members
            .change_member(&removal)
            .await
            .unwrap()
            .is_ok()
    );
    assert_eq!(access.session("cookie-max", T0 + 1).await.unwrap(), None);
    assert_eq!(access.token("token-max").await.unwrap(), None);
    assert_eq!(
        access.use_sign_in_link("link-max", T0 + 1).await.unwrap(),
        None
    );
    assert!(
        access
            .session("cookie-alice", T0 + 1)
            .await
            .unwrap()
            .is_some()
    );
}

async fn members_a_web_visitor_joins_without_an_account(stores: &Stores) {
    let invite = join_invite("h31", FamilyRole::Child, None, Some("alice"));
    create(stores, &invite).await;
    let visitor = || PlatformUser::WebVisitor("127.0.0.1".into());
    let mut first = redeem("h31", visitor(), T0);
    first.name = Some("Max".into());
    let max = joined(stores, &first).await;
    assert_eq!(max.id.as_str(), "max");
    assert_eq!(
        (max.telegram_user_id, max.matrix_user_id.clone()),
        (None, None)
    );
    // The same address is nobody's account: another code makes another member.
    let second = join_invite("h32", FamilyRole::Child, None, Some("alice"));
    create(stores, &second).await;
    let mut again = redeem("h32", visitor(), T0 + 1);
    again.name = Some("Max".into());
    let other = joined(stores, &again).await;
    assert_eq!(other.id.as_str(), "max-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_members_and_used_codes_across_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());
    let max = {
        let stores = open_or_panic(&url).await;
        let invite = join_invite("h14", FamilyRole::Child, Some("Max"), Some("alice"));
        create(&stores, &invite).await;
        let max = joined(&stores, &redeem("h14", PlatformUser::Telegram(42), T0)).await;
        stores.close().await;
        max
    };
    let stores = open_or_panic(&url).await;
    assert_eq!(stores.members.stored_members().await.unwrap(), vec![max]);
    let again = redeem("h14", PlatformUser::Telegram(43), T0 + 1);
    assert_eq!(
        stores.members.redeem(&again).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    stores.close().await;
}
