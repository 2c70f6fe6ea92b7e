//! `family::Membership` over the in-memory and SQLite stores: an expired code refused like
//! a wrong one; a member's `/link` code used on another platform makes one identity there;
//! a joined member's id from their name, another when it is taken; the last parent kept; a
//! removed member's own sources and places among a conversation's readers gone from family
//! memory, the family's and the conversation's staying.

use std::sync::Arc;

use hearth::config::FamilyMember;
use hearth::family::{CODE_VALID_MS, Change, Family, Joined, Membership};
use hearth::ids::FamilyRole;
use hearth::ports::{
    MemoryFilter, MemoryKind, MemoryReaders, MemorySource, PlatformUser, memory_query_words,
};
use hearth::storage::Stores;

use crate::support::test_config::telegram_member;

const T0: i64 = 1_700_000_000_000;

fn alice() -> FamilyMember {
    telegram_member("alice", "Alice", 1001)
}

fn membership(stores: &Stores) -> Membership {
    Membership::new(
        Arc::new(Family::new(&[alice()]).stored_in(stores.members.clone())),
        stores.members.clone(),
        stores.family_memory.clone(),
        false,
    )
}

async fn every_store() -> Vec<(Stores, Option<tempfile::TempDir>)> {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", folder.path().join("m.db").display());
    let sqlite = hearth::storage::open(&url, 2).await.unwrap();
    vec![(Stores::in_memory(), None), (sqlite, Some(folder))]
}

async fn invite(membership: &Membership, role: FamilyRole, name: &str, at: i64) -> String {
    match membership
        .invite(&alice(), role, Some(name.to_string()), at)
        .await
        .unwrap()
    {
        Change::Done(issued) => issued.code,
        Change::Refused(text) => panic!("invite refused: {text}"),
    }
}

#[tokio::test]
async fn an_expired_code_is_refused_like_a_wrong_one() {
    for (stores, _folder) in every_store().await {
        let membership = membership(&stores);
        let code = invite(&membership, FamilyRole::Child, "Max", T0).await;
        assert!(membership.invites_open(T0 + CODE_VALID_MS - 1));
        assert!(!membership.invites_open(T0 + CODE_VALID_MS));
        let late = membership
            .join(&PlatformUser::Telegram(3), &code, None, T0 + CODE_VALID_MS)
            .await
            .unwrap();
        let Change::Refused(text) = late else {
            panic!("an expired code was taken: {late:?}");
        };
        assert!(text.contains("not valid"), "{text}");
        assert!(membership.family().by_telegram_id(3).is_none());
    }
}

#[tokio::test]
async fn a_link_code_makes_one_identity_on_two_platforms() {
    for (stores, _folder) in every_store().await {
        let membership = membership(&stores);
        let Change::Done(issued) = membership.link_code(&alice(), T0).await.unwrap() else {
            panic!("no link code");
        };
        let matrix = PlatformUser::Matrix("@alice:example.org".into());
        match membership
            .join(&matrix, &issued.code, None, T0 + 1)
            .await
            .unwrap()
        {
            Change::Done(Joined::Linked(linked)) => {
                assert_eq!(linked.id.as_str(), "alice");
                assert_eq!(linked.role, FamilyRole::Parent);
            }
            other => panic!("expected a link, got {other:?}"),
        }
        let family = membership.family();
        let on_matrix = family.by_matrix_id("@alice:example.org").unwrap();
        let on_telegram = family.by_telegram_id(1001).unwrap();
        assert_eq!(on_matrix, on_telegram);
        assert_eq!(family.members().len(), 1);
        // After a restart, the same.
        let again = self::membership(&stores);
        again.load().await.unwrap();
        assert_eq!(
            again
                .family()
                .by_matrix_id("@alice:example.org")
                .unwrap()
                .id
                .as_str(),
            "alice"
        );
    }
}

#[tokio::test]
async fn a_new_members_id_comes_from_their_name_and_the_last_parent_stays() {
    for (stores, _folder) in every_store().await {
        let membership = membership(&stores);
        let mut ids = Vec::new();
        for (n, name) in ["Max Müller", "Max Müller", "Alice"]
            .into_iter()
            .enumerate()
        {
            let code = invite(&membership, FamilyRole::Parent, name, T0).await;
            let user = PlatformUser::Telegram(10 + n as i64);
            match membership.join(&user, &code, None, T0 + 1).await.unwrap() {
                Change::Done(Joined::Member { member, .. }) => ids.push(member.id.to_string()),
                other => panic!("expected a member, got {other:?}"),
            }
        }
        // "alice" is the configuration's: the new Alice gets the next free id.
        assert_eq!(ids, ["max-müller", "max-müller-2", "alice-2"]);
        // The command line may change anyone joined, but keeps a parent.
        for id in ["max-müller", "max-müller-2"] {
            let changed = membership
                .set_role(None, id, FamilyRole::Child, T0 + 2)
                .await
                .unwrap();
            assert!(matches!(changed, Change::Done(_)), "{changed:?}");
        }
        let removed = membership.remove(None, "alice-2", T0 + 3).await.unwrap();
        assert!(matches!(removed, Change::Done(_)), "{removed:?}");
        // Alice of the configuration is the last parent now, and hers is the file's.
        let refused = membership.remove(None, "alice", T0 + 4).await.unwrap();
        assert!(
            matches!(refused, Change::Refused(ref text) if text.contains("configuration file")),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn a_removed_member_s_own_memory_goes_with_them() {
    for (stores, _folder) in every_store().await {
        let membership = membership(&stores);
        let code = invite(&membership, FamilyRole::Child, "Max", T0).await;
        let user = PlatformUser::Telegram(77);
        let joined = membership.join(&user, &code, None, T0 + 1).await.unwrap();
        assert!(
            matches!(joined, Change::Done(Joined::Member { .. })),
            "{joined:?}"
        );
        let max: hearth::ids::MemberId = "max".parse().unwrap();
        let source = |kind, reference: &str, readers, text: &str| MemorySource {
            kind,
            reference: reference.into(),
            title: String::new(),
            readers,
            member: Some(max.clone()),
            conversation: (kind == MemoryKind::Chat).then(|| "telegram:-100".parse().unwrap()),
            created_at_ms: T0,
            chunks: vec![text.into()],
        };
        let sources = [
            source(
                MemoryKind::Note,
                "1",
                MemoryReaders::Member,
                "max's secret diary",
            ),
            source(
                MemoryKind::Note,
                "2",
                MemoryReaders::Family,
                "max's family recipe",
            ),
            source(
                MemoryKind::Chat,
                "3",
                MemoryReaders::Conversation,
                "max's secret in the group",
            ),
        ];
        let memory = &stores.family_memory;
        memory.put_sources(&sources, None, T0).await.unwrap();
        let found = |reader: hearth::ids::MemberId| {
            let memory = memory.clone();
            async move {
                let words = memory_query_words("max");
                let hits = memory
                    .search_words(&reader, &words, &MemoryFilter::default(), 10)
                    .await
                    .unwrap();
                let mut texts: Vec<String> = hits.into_iter().map(|hit| hit.text).collect();
                texts.sort();
                texts
            }
        };
        assert_eq!(found(max.clone()).await.len(), 3);

        let removed = membership
            .remove(Some(&alice()), "max", T0 + 2)
            .await
            .unwrap();
        assert!(matches!(removed, Change::Done(_)), "{removed:?}");
        // Should the id be given again, its new member finds only the family's.
        assert_eq!(found(max.clone()).await, ["max's family recipe"]);
        assert_eq!(memory.status(None).await.unwrap().sources, 2);
    }
}
