//! The `ShoppingLists` port: items merged whatever their case, listed in the order first
//! added, removed by name, lists independent and cleared, blank names and zero quantities
//! refused.

use hearth::ports::{ShoppingItem, StorageError};
use hearth::storage::Stores;

use super::T0;
use super::member;

adapter_suite!(
    shopping_add_merges_the_same_item_whatever_its_case,
    shopping_lists_items_in_the_order_first_added,
    shopping_remove_by_name_reports_whether_it_was_there,
    shopping_lists_are_independent_and_clear_counts,
    shopping_refuses_blank_names_and_zero_quantity,
);

pub(super) fn shopping_item(
    name: &str,
    quantity: u32,
    added_by: &str,
    added_at_ms: i64,
) -> ShoppingItem {
    ShoppingItem {
        name: name.to_string(),
        quantity,
        added_by: member(added_by),
        added_at_ms,
    }
}

pub(super) async fn item_names(stores: &Stores, list: &str) -> Vec<String> {
    let items = stores.shopping_lists.list(list).await.unwrap();
    items.into_iter().map(|item| item.name).collect()
}

async fn shopping_add_merges_the_same_item_whatever_its_case(stores: &Stores) {
    let lists = &stores.shopping_lists;
    let milk = lists
        .add("groceries", "Milk", 2, &member("alice"), T0)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("Milk", 2, "alice", T0));
    // Another spelling, member and time: the item first added grows, and keeps its
    // spelling, who added it and when.
    let merged = lists
        .add("groceries", "  mILK \n", 3, &member("bob"), T0 + 1)
        .await
        .unwrap();
    assert_eq!(merged, shopping_item("Milk", 5, "alice", T0));
    // Beyond ASCII too, where SQLite's own NOCASE would not see one item.
    lists
        .add("groceries", " Äpfel", 1, &member("bob"), T0 + 2)
        .await
        .unwrap();
    let apples = lists
        .add("groceries", "äPFEL", 2, &member("alice"), T0 + 3)
        .await
        .unwrap();
    assert_eq!(apples, shopping_item("Äpfel", 3, "bob", T0 + 2));
    // List names are compared the same way.
    assert_eq!(
        lists.list(" Groceries ").await.unwrap(),
        vec![
            shopping_item("Milk", 5, "alice", T0),
            shopping_item("Äpfel", 3, "bob", T0 + 2),
        ]
    );
}

async fn shopping_lists_items_in_the_order_first_added(stores: &Stores) {
    let lists = &stores.shopping_lists;
    assert!(lists.list("groceries").await.unwrap().is_empty());
    // Times against the order of adding: only the adding explains the listing.
    for (n, name) in ["bread", "eggs", "milk", "butter"].into_iter().enumerate() {
        let at_ms = T0 - i64::try_from(n).unwrap();
        lists
            .add("groceries", name, 1, &member("alice"), at_ms)
            .await
            .unwrap();
    }
    lists
        .add("groceries", "EGGS", 6, &member("bob"), T0 + 9)
        .await
        .unwrap();
    assert_eq!(
        item_names(stores, "groceries").await,
        ["bread", "eggs", "milk", "butter"],
        "adding more keeps an item's place"
    );
    // Removed and added again: added anew, so last.
    assert!(lists.remove("groceries", "bread").await.unwrap());
    lists
        .add("groceries", "Bread", 1, &member("bob"), T0)
        .await
        .unwrap();
    assert_eq!(
        item_names(stores, "groceries").await,
        ["eggs", "milk", "butter", "Bread"]
    );
}

async fn shopping_remove_by_name_reports_whether_it_was_there(stores: &Stores) {
    let lists = &stores.shopping_lists;
    lists
        .add("groceries", "Bread", 2, &member("alice"), T0)
        .await
        .unwrap();
    lists
        .add("groceries", "Milk", 1, &member("alice"), T0)
        .await
        .unwrap();
    lists
        .add("hardware", "bread", 1, &member("bob"), T0)
        .await
        .unwrap();
    assert!(lists.remove("groceries", " BREAD ").await.unwrap());
    assert!(!lists.remove("groceries", "bread").await.unwrap(), "gone");
    assert!(!lists.remove("groceries", "cheese").await.unwrap());
    assert!(!lists.remove("never-made", "bread").await.unwrap());
    assert_eq!(item_names(stores, "groceries").await, ["Milk"]);
    assert_eq!(item_names(stores, "hardware").await, ["bread"]);
}

async fn shopping_lists_are_independent_and_clear_counts(stores: &Stores) {
    let lists = &stores.shopping_lists;
    for name in ["milk", "tape", "eggs"] {
        lists
            .add("groceries", name, 1, &member("alice"), T0)
            .await
            .unwrap();
    }
    let tape = lists
        .add("hardware", "Tape", 4, &member("bob"), T0 + 1)
        .await
        .unwrap();
    assert_eq!(tape, shopping_item("Tape", 4, "bob", T0 + 1), "not merged");
    lists
        .add("hardware", "nails", 1, &member("bob"), T0 + 2)
        .await
        .unwrap();

    assert_eq!(lists.clear("groceries").await.unwrap(), 3);
    assert!(lists.list("groceries").await.unwrap().is_empty());
    assert_eq!(lists.clear("groceries").await.unwrap(), 0);
    assert_eq!(lists.clear("never-made").await.unwrap(), 0);
    assert_eq!(
        lists.list("hardware").await.unwrap(),
        vec![
            shopping_item("Tape", 4, "bob", T0 + 1),
            shopping_item("nails", 1, "bob", T0 + 2),
        ]
    );
    // A cleared list starts afresh.
    let milk = lists
        .add("groceries", "milk", 1, &member("bob"), T0 + 5)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("milk", 1, "bob", T0 + 5));
}

async fn shopping_refuses_blank_names_and_zero_quantity(stores: &Stores) {
    let lists = &stores.shopping_lists;
    let refused = |result: Result<ShoppingItem, StorageError>, what: &str| match result {
        Err(StorageError::Invalid(message)) => {
            assert!(message.contains(what), "{message} names {what}")
        }
        other => panic!("{what}: expected Invalid, got {other:?}"),
    };
    refused(
        lists
            .add("groceries", "milk", 0, &member("alice"), T0)
            .await,
        "0",
    );
    refused(
        lists.add("groceries", " \t", 1, &member("alice"), T0).await,
        "shopping item",
    );
    refused(
        lists.add("  ", "milk", 1, &member("alice"), T0).await,
        "shopping list",
    );
    assert!(lists.list("groceries").await.unwrap().is_empty());
    // The quantity stops at the most the port can carry.
    lists
        .add("groceries", "rice", u32::MAX - 1, &member("alice"), T0)
        .await
        .unwrap();
    let rice = lists
        .add("groceries", "rice", 5, &member("alice"), T0)
        .await
        .unwrap();
    assert_eq!(rice.quantity, u32::MAX);
}
