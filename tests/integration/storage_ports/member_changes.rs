//! The `Members` port deciding on the family as stored: who asks must be a parent as
//! stored, the family keeps a parent however many change it at once, a demoted parent's
//! codes for a parent go, every change moves the family's version, a write changes only
//! its columns, a second account of a platform waits for the member's yes, wrong codes are
//! counted per sender and overall, and set-up's code yields once the family has a parent.

use std::sync::Arc;

use hearth::ids::FamilyRole;
use hearth::ports::{
    ChangeRefused, ConfiguredMembers, InvitePurpose, JOIN_LIMITS_OVERALL, JOIN_LIMITS_PER_SOURCE,
    LockScope, MemberChangeKind, NewInvite, PlatformUser, RedeemRefused, Redeemed, StoredMember,
};
use hearth::storage::Stores;

use super::members::{HOUR, change, configured, create, create_with, join_invite, joined, redeem};
use super::{T0, member};

adapter_suite!(
    member_changes_are_decided_on_the_family_as_stored,
    member_changes_demoting_a_parent_revokes_their_codes_for_a_parent,
    member_changes_two_parents_demoting_each_other_leave_one,
    member_changes_move_the_family_version,
    member_changes_settings_change_only_their_columns,
    member_changes_a_second_account_waits_for_the_members_yes,
    member_changes_wrong_codes_are_limited_per_sender_and_overall,
    member_changes_set_up_code_yields_once_there_is_a_parent,
);

/// A stored member `name` with `role`, joined on a code of alice's, Telegram `user`.
async fn stored(stores: &Stores, name: &str, role: FamilyRole, user: i64) -> StoredMember {
    let hash = format!("code-{name}");
    create(stores, &join_invite(&hash, role, Some(name), Some("alice"))).await;
    joined(stores, &redeem(&hash, PlatformUser::Telegram(user), T0)).await
}

async fn member_changes_are_decided_on_the_family_as_stored(stores: &Stores) {
    let bob = stored(stores, "Bob", FamilyRole::Parent, 2).await;
    let max = stored(stores, "Max", FamilyRole::Child, 3).await;
    let changes = &stores.members;
    // A child changes nobody; nor does someone who is no member.
    for by in ["max", "mallory"] {
        let tried = change(Some(by), "bob", MemberChangeKind::Remove);
        let refused = changes.change_member(&tried).await.unwrap().unwrap_err();
        let expected = if by == "max" {
            ChangeRefused::NotAParent
        } else {
            ChangeRefused::NoSuchMember
        };
        assert_eq!(refused, expected);
    }
    // Nobody changes themselves, nor a member of the configuration.
    let own = change(Some("bob"), "bob", MemberChangeKind::Remove);
    assert_eq!(
        changes.change_member(&own).await.unwrap(),
        Err(ChangeRefused::Yourself)
    );
    let configured_one = change(Some("bob"), "alice", MemberChangeKind::Remove);
    assert_eq!(
        changes.change_member(&configured_one).await.unwrap(),
        Err(ChangeRefused::Configured)
    );
    // Bob made a child: from then on his role as stored refuses what a parent may do.
    let demote = change(
        Some("alice"),
        "bob",
        MemberChangeKind::SetRole(FamilyRole::Child),
    );
    assert_eq!(
        changes.change_member(&demote).await.unwrap().unwrap().role,
        FamilyRole::Child
    );
    let after = change(Some("bob"), "max", MemberChangeKind::Remove);
    assert_eq!(
        changes.change_member(&after).await.unwrap(),
        Err(ChangeRefused::NotAParent)
    );
    let invite = join_invite("by-bob", FamilyRole::Child, None, Some("bob"));
    assert_eq!(
        changes.create_invite(&invite, &configured()).await.unwrap(),
        Err(ChangeRefused::NotAParent)
    );
    // Without a parent in the configuration, the last stored parent stays one.
    let no_file = ConfiguredMembers::default();
    let promote = hearth::ports::MemberChange {
        configured: no_file.clone(),
        ..change(None, "max", MemberChangeKind::SetRole(FamilyRole::Parent))
    };
    changes.change_member(&promote).await.unwrap().unwrap();
    for kind in [
        MemberChangeKind::SetRole(FamilyRole::Child),
        MemberChangeKind::Remove,
    ] {
        let last = hearth::ports::MemberChange {
            configured: no_file.clone(),
            ..change(None, "max", kind)
        };
        assert_eq!(
            changes.change_member(&last).await.unwrap(),
            Err(ChangeRefused::LastParent)
        );
    }
    let members = stores.members.stored_members().await.unwrap();
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(
        members
            .iter()
            .any(|row| row.id == max.id && row.role == FamilyRole::Parent)
    );
    assert!(members.iter().any(|row| row.id == bob.id));
}

async fn member_changes_demoting_a_parent_revokes_their_codes_for_a_parent(stores: &Stores) {
    stored(stores, "Bob", FamilyRole::Parent, 2).await;
    create(
        stores,
        &join_invite("bob-parent", FamilyRole::Parent, None, Some("bob")),
    )
    .await;
    create(
        stores,
        &join_invite("bob-child", FamilyRole::Child, None, Some("bob")),
    )
    .await;
    let demote = change(
        Some("alice"),
        "bob",
        MemberChangeKind::SetRole(FamilyRole::Child),
    );
    stores
        .members
        .change_member(&demote)
        .await
        .unwrap()
        .unwrap();
    let parent = redeem("bob-parent", PlatformUser::Telegram(20), T0 + 1);
    assert_eq!(
        stores.members.redeem(&parent).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    // A code for a child stays: it was a parent's decision, and makes no parent.
    let child = joined(
        stores,
        &redeem("bob-child", PlatformUser::Telegram(21), T0 + 2),
    )
    .await;
    assert_eq!(child.role, FamilyRole::Child);
}

async fn member_changes_two_parents_demoting_each_other_leave_one(stores: &Stores) {
    // No parent in the configuration: bob and carol are the family's only parents.
    let no_file = ConfiguredMembers::default();
    let setup = join_invite("setup", FamilyRole::Parent, Some("Bob"), None);
    create_with(stores, &setup, &no_file).await;
    joined(stores, &redeem("setup", PlatformUser::Telegram(2), T0)).await;
    let by_bob = join_invite("carol", FamilyRole::Parent, Some("Carol"), Some("bob"));
    create_with(stores, &by_bob, &no_file).await;
    joined(stores, &redeem("carol", PlatformUser::Telegram(3), T0)).await;
    for round in 0..5 {
        let demote = |by: &str, target: &str| hearth::ports::MemberChange {
            configured: no_file.clone(),
            ..change(
                Some(by),
                target,
                MemberChangeKind::SetRole(FamilyRole::Child),
            )
        };
        let members = Arc::clone(&stores.members);
        let other = Arc::clone(&stores.members);
        let (first, second) = (demote("bob", "carol"), demote("carol", "bob"));
        let (one, two) = tokio::join!(
            tokio::spawn(async move { members.change_member(&first).await.unwrap() }),
            tokio::spawn(async move { other.change_member(&second).await.unwrap() }),
        );
        let done = [one.unwrap(), two.unwrap()];
        assert_eq!(
            done.iter().filter(|change| change.is_ok()).count(),
            1,
            "round {round}: {done:?}"
        );
        let parents: Vec<_> = stores
            .members
            .stored_members()
            .await
            .unwrap()
            .into_iter()
            .filter(|row| row.role == FamilyRole::Parent)
            .collect();
        assert_eq!(parents.len(), 1, "round {round}: {parents:?}");
        // Both parents again for the next round.
        let loser = if parents[0].id.as_str() == "bob" {
            "carol"
        } else {
            "bob"
        };
        let promote = hearth::ports::MemberChange {
            configured: no_file.clone(),
            ..change(
                Some(parents[0].id.as_str()),
                loser,
                MemberChangeKind::SetRole(FamilyRole::Parent),
            )
        };
        stores
            .members
            .change_member(&promote)
            .await
            .unwrap()
            .unwrap();
    }
}

async fn member_changes_move_the_family_version(stores: &Stores) {
    let members = &stores.members;
    let mut seen = members.family_version().await.unwrap();
    fn moved(seen: &mut i64, now: i64, what: &str) {
        assert!(now > *seen, "{what}: version {now} after {seen}");
        *seen = now;
    }
    create(
        stores,
        &join_invite("v1", FamilyRole::Child, Some("Max"), Some("alice")),
    )
    .await;
    moved(
        &mut seen,
        members.family_version().await.unwrap(),
        "a code adding a member",
    );
    let max = joined(stores, &redeem("v1", PlatformUser::Telegram(3), T0)).await;
    moved(&mut seen, members.family_version().await.unwrap(), "a join");
    let family = members.stored_family().await.unwrap();
    assert_eq!(family.version, members.family_version().await.unwrap());
    assert_eq!(family.members, vec![max.clone()]);
    assert_eq!(family.open_until_ms, None, "the one code was used");
    members
        .save_settings(&max.id, Some("Europe/Berlin"), None, &max)
        .await
        .unwrap();
    moved(
        &mut seen,
        members.family_version().await.unwrap(),
        "settings",
    );
    let role = change(
        Some("alice"),
        "max",
        MemberChangeKind::SetRole(FamilyRole::Parent),
    );
    members.change_member(&role).await.unwrap().unwrap();
    moved(&mut seen, members.family_version().await.unwrap(), "a role");
    // A refused change moves nothing.
    let refused = change(Some("max"), "max", MemberChangeKind::Remove);
    members.change_member(&refused).await.unwrap().unwrap_err();
    assert_eq!(members.family_version().await.unwrap(), seen);
    let removal = change(Some("alice"), "max", MemberChangeKind::Remove);
    members.change_member(&removal).await.unwrap().unwrap();
    moved(
        &mut seen,
        members.family_version().await.unwrap(),
        "a removal",
    );
}

async fn member_changes_settings_change_only_their_columns(stores: &Stores) {
    let max = stored(stores, "Max", FamilyRole::Child, 3).await;
    // An old copy of Max's row must not bring anything back: only the settings are written.
    let stale = StoredMember {
        telegram_user_id: None,
        role: FamilyRole::Parent,
        ..max.clone()
    };
    stores
        .members
        .save_settings(&max.id, Some("Europe/Paris"), Some("telegram"), &stale)
        .await
        .unwrap();
    let rows = stores.members.stored_members().await.unwrap();
    assert_eq!(
        rows,
        vec![StoredMember {
            timezone: Some("Europe/Paris".into()),
            preferred_channel: Some("telegram".into()),
            ..max.clone()
        }]
    );
    // A member of the configuration gets a row of their own, with no account.
    let alice = StoredMember::new(
        member("alice"),
        Some("Alice".into()),
        FamilyRole::Parent,
        None,
        T0,
    );
    stores
        .members
        .save_settings(&alice.id, Some("UTC"), None, &alice)
        .await
        .unwrap();
    let rows = stores.members.stored_members().await.unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].timezone.as_deref(), Some("UTC"));
    assert_eq!(rows[1].telegram_user_id, Some(3), "Max keeps his account");
}

async fn member_changes_a_second_account_waits_for_the_members_yes(stores: &Stores) {
    let max = stored(stores, "Max", FamilyRole::Child, 3).await;
    let link = |hash: &str| NewInvite {
        purpose: InvitePurpose::Link {
            member: max.id.clone(),
            role: FamilyRole::Child,
            name: Some("Max".into()),
        },
        ..join_invite(hash, FamilyRole::Child, None, Some("max"))
    };
    create(stores, &link("l1")).await;
    // From the account Max has: his already, nothing changes.
    let same = redeem("l1", PlatformUser::Telegram(3), T0 + 1);
    assert!(matches!(
        stores.members.redeem(&same).await.unwrap(),
        Ok(Redeemed::AlreadyTheirs(_))
    ));
    // From another Telegram account: nothing replaced until Max says yes.
    create(stores, &link("l2")).await;
    let other = redeem("l2", PlatformUser::Telegram(33), T0 + 2);
    assert!(matches!(
        stores.members.redeem(&other).await.unwrap(),
        Ok(Redeemed::SwitchAsked(_))
    ));
    assert_eq!(
        stores.members.stored_members().await.unwrap()[0].telegram_user_id,
        Some(3)
    );
    // No yes waits on Matrix; on Telegram, the yes replaces the account and spends the code.
    assert_eq!(
        stores
            .members
            .confirm_switch(&max.id, "matrix", T0 + 3)
            .await
            .unwrap(),
        None
    );
    let (switched, account) = stores
        .members
        .confirm_switch(&max.id, "telegram", T0 + 3)
        .await
        .unwrap()
        .expect("the waiting account");
    assert_eq!(account, PlatformUser::Telegram(33));
    assert_eq!(switched.telegram_user_id, Some(33));
    assert_eq!(
        stores.members.stored_members().await.unwrap()[0].telegram_user_id,
        Some(33)
    );
    assert_eq!(
        stores
            .members
            .confirm_switch(&max.id, "telegram", T0 + 4)
            .await
            .unwrap(),
        None,
        "a yes counts once"
    );
    // A code of another platform links at once, keeping the first.
    create(stores, &link("l3")).await;
    let matrix = redeem("l3", PlatformUser::Matrix("@max:x".into()), T0 + 5);
    let Ok(Redeemed::Linked(linked)) = stores.members.redeem(&matrix).await.unwrap() else {
        panic!("expected a link");
    };
    assert_eq!(
        (linked.telegram_user_id, linked.matrix_user_id.as_deref()),
        (Some(33), Some("@max:x"))
    );
}

async fn member_changes_wrong_codes_are_limited_per_sender_and_overall(stores: &Stores) {
    create(
        stores,
        &join_invite("good", FamilyRole::Child, None, Some("alice")),
    )
    .await;
    let guess = |n: i64, at: i64| redeem(&format!("wrong-{n}"), PlatformUser::Telegram(50), at);
    let per_hour = i64::from(JOIN_LIMITS_PER_SOURCE[0].max);
    for n in 0..per_hour {
        assert_eq!(
            stores.members.redeem(&guess(n, T0 + n)).await.unwrap(),
            Err(RedeemRefused::NoSuchCode)
        );
    }
    // Past the hour's limit even the right code is not tried, from that sender.
    let right = redeem("good", PlatformUser::Telegram(50), T0 + 100);
    let Err(RedeemRefused::Limited(locked)) = stores.members.redeem(&right).await.unwrap() else {
        panic!("expected a lock");
    };
    assert_eq!(locked.scope, LockScope::Source);
    assert_eq!(locked.until_ms, T0 + HOUR);
    // An hour later the sender may try again, until the day's limit.
    let day = i64::from(JOIN_LIMITS_PER_SOURCE[1].max);
    for n in per_hour..day {
        let at = T0 + HOUR + n;
        assert_eq!(
            stores.members.redeem(&guess(n, at)).await.unwrap(),
            Err(RedeemRefused::NoSuchCode)
        );
    }
    let late = redeem("good", PlatformUser::Telegram(50), T0 + 3 * HOUR);
    let Err(RedeemRefused::Limited(locked)) = stores.members.redeem(&late).await.unwrap() else {
        panic!("expected the day's lock");
    };
    assert_eq!(locked.until_ms, T0 + 24 * HOUR);
    // Another sender is not limited by these tries; everyone is, past the overall limit.
    let overall = i64::from(JOIN_LIMITS_OVERALL[0].max);
    let mut tried = day;
    let mut sender = 100;
    while tried < overall {
        let at = T0 + 4 * HOUR + tried;
        let from = redeem(&format!("w{tried}"), PlatformUser::Telegram(sender), at);
        assert_eq!(
            stores.members.redeem(&from).await.unwrap(),
            Err(RedeemRefused::NoSuchCode),
            "try {tried}"
        );
        tried += 1;
        if tried % per_hour == 0 {
            sender += 1;
        }
    }
    let anyone = redeem("good", PlatformUser::Matrix("@new:x".into()), T0 + 5 * HOUR);
    let Err(RedeemRefused::Limited(locked)) = stores.members.redeem(&anyone).await.unwrap() else {
        panic!("expected the overall lock");
    };
    assert_eq!(locked.scope, LockScope::Everyone);
    // A day after the first tries the code works again (it lasts a day from T0: made anew).
    create(
        stores,
        &NewInvite {
            created_at_ms: T0 + 24 * HOUR,
            expires_at_ms: T0 + 48 * HOUR,
            ..join_invite("good-again", FamilyRole::Child, None, Some("alice"))
        },
    )
    .await;
    let next_day = redeem(
        "good-again",
        PlatformUser::Matrix("@new:x".into()),
        T0 + 30 * HOUR,
    );
    assert!(matches!(
        stores.members.redeem(&next_day).await.unwrap(),
        Ok(Redeemed::Joined { .. })
    ));
}

async fn member_changes_set_up_code_yields_once_there_is_a_parent(stores: &Stores) {
    let no_file = ConfiguredMembers::default();
    for hash in ["setup-1", "setup-2"] {
        create_with(
            stores,
            &join_invite(hash, FamilyRole::Parent, None, None),
            &no_file,
        )
        .await;
    }
    assert!(
        stores
            .members
            .open_invites_until(T0)
            .await
            .unwrap()
            .is_some()
    );
    joined(
        stores,
        &redeem("setup-1", PlatformUser::Telegram(1), T0 + 1),
    )
    .await;
    // The second code of set-up no longer makes anyone a parent, nor opens room invites.
    let second = redeem("setup-2", PlatformUser::Telegram(2), T0 + 2);
    assert_eq!(
        stores.members.redeem(&second).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
    assert_eq!(
        stores.members.open_invites_until(T0 + 2).await.unwrap(),
        None
    );
    // And no new one is made while the family has a parent.
    let third = join_invite("setup-3", FamilyRole::Parent, None, None);
    assert_eq!(
        stores
            .members
            .create_invite(&third, &no_file)
            .await
            .unwrap(),
        Err(ChangeRefused::HasParent)
    );
    // A code of set-up made while the configuration names a parent does not work either.
    let with_file = hearth::ports::Redeem {
        configured: configured(),
        ..redeem("setup-2", PlatformUser::Telegram(3), T0 + 3)
    };
    assert_eq!(
        stores.members.redeem(&with_file).await.unwrap(),
        Err(RedeemRefused::NoSuchCode)
    );
}
