//! The `UserProfiles` port: facts set, read, overwritten and deleted, each member's own.

use hearth::ports::ProfileFacts;
use hearth::storage::Stores;

use super::member;

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
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        ProfileFacts::new()
    );

    profiles
        .set(&member("alice"), "name", Some("Alice"))
        .await
        .unwrap();
    profiles
        .set(&member("alice"), "address", Some("1 Rue de la Paix"))
        .await
        .unwrap();
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alice")])
    );

    profiles
        .set(&member("alice"), "name", Some("Alicia"))
        .await
        .unwrap();
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alicia")])
    );

    profiles
        .set(&member("alice"), "address", None)
        .await
        .unwrap();
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        facts(&[("name", "Alicia")])
    );
    // Forgetting what is not there is fine.
    profiles
        .set(&member("alice"), "address", None)
        .await
        .unwrap();
    profiles.set(&member("nobody"), "name", None).await.unwrap();
    assert_eq!(
        profiles.get(&member("nobody")).await.unwrap(),
        ProfileFacts::new()
    );

    profiles.set(&member("alice"), "name", None).await.unwrap();
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        ProfileFacts::new()
    );
}

async fn profiles_members_are_isolated(stores: &Stores) {
    let profiles = &stores.profiles;
    profiles
        .set(&member("alice"), "phone", Some("111"))
        .await
        .unwrap();
    profiles
        .set(&member("bob"), "phone", Some("222"))
        .await
        .unwrap();
    profiles
        .set(&member("bob"), "food", Some("pizza"))
        .await
        .unwrap();

    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        facts(&[("phone", "111")])
    );
    assert_eq!(
        profiles.get(&member("bob")).await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );

    profiles.set(&member("alice"), "phone", None).await.unwrap();
    assert_eq!(
        profiles.get(&member("alice")).await.unwrap(),
        ProfileFacts::new()
    );
    assert_eq!(
        profiles.get(&member("bob")).await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );
    assert_eq!(
        profiles.get(&member("carol")).await.unwrap(),
        ProfileFacts::new()
    );
}
