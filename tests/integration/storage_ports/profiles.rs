//! The `UserProfiles` port: facts set, read, overwritten and deleted, each member's own.

use hearth::ports::ProfileFacts;
use hearth::storage::Stores;

adapter_suite!(
    profiles_set_get_overwrite_delete,
    profiles_members_are_isolated,
);

pub(super) fn facts(pairs: &[(&str, &str)]) -> ProfileFacts {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

async fn profiles_set_get_overwrite_delete(stores: &Stores) {
    let profiles = &stores.profiles;
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());

    profiles.set("alice", "name", Some("Alice")).await.unwrap();
    profiles
        .set("alice", "address", Some("1 Rue de la Paix"))
        .await
        .unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alice")])
    );

    profiles.set("alice", "name", Some("Alicia")).await.unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alicia")])
    );

    profiles.set("alice", "address", None).await.unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("name", "Alicia")])
    );
    // Forgetting what is not there is fine.
    profiles.set("alice", "address", None).await.unwrap();
    profiles.set("nobody", "name", None).await.unwrap();
    assert_eq!(profiles.get("nobody").await.unwrap(), ProfileFacts::new());

    profiles.set("alice", "name", None).await.unwrap();
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());
}

async fn profiles_members_are_isolated(stores: &Stores) {
    let profiles = &stores.profiles;
    profiles.set("alice", "phone", Some("111")).await.unwrap();
    profiles.set("bob", "phone", Some("222")).await.unwrap();
    profiles.set("bob", "food", Some("pizza")).await.unwrap();

    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("phone", "111")])
    );
    assert_eq!(
        profiles.get("bob").await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );

    profiles.set("alice", "phone", None).await.unwrap();
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());
    assert_eq!(
        profiles.get("bob").await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );
    assert_eq!(profiles.get("carol").await.unwrap(), ProfileFacts::new());
}
