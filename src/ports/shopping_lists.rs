//! The family's shopping lists, for the built-in shopping-list plugin.
//!
//! A list ("groceries") is shared by the whole family. Names, of lists and of items,
//! are compared trimmed and case-insensitively (Unicode lowercase, computed here so
//! every adapter agrees): "Milk " added to a list holding "milk" adds to its quantity.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::ids::MemberId;

/// One item of a list, as it now stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShoppingItem {
    /// As first added, trimmed; a later add spelled differently keeps this spelling.
    pub name: String,
    /// At least 1.
    pub quantity: u32,
    /// The member who first added it.
    pub added_by: MemberId,
    /// When it was first added; items are listed in this order.
    pub added_at_ms: i64,
}

#[async_trait]
pub trait ShoppingLists: Send + Sync {
    /// Add `quantity` of `name` to `list`, or that many more if the item is already
    /// there; returns the item as it now stands. Refuses a blank name or quantity 0.
    async fn add(
        &self,
        list: &str,
        name: &str,
        quantity: u32,
        member_id: &MemberId,
        at_ms: i64,
    ) -> Result<ShoppingItem, StorageError>;
    /// Remove the item called `name` (any case); whether it was on the list.
    async fn remove(&self, list: &str, name: &str) -> Result<bool, StorageError>;
    /// The items of `list` in the order they were first added; empty for an unknown list.
    async fn list(&self, list: &str) -> Result<Vec<ShoppingItem>, StorageError>;
    /// Empty `list`; how many items it held.
    async fn clear(&self, list: &str) -> Result<u64, StorageError>;
}

/// The key a list or item name is compared by: trimmed and lowercased. Refuses a name
/// that is blank, since nobody could ask for it again.
pub(crate) fn shopping_key(what: &str, name: &str) -> Result<String, StorageError> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(StorageError::Invalid(format!(
            "{what} name {name:?} is blank"
        )));
    }
    Ok(trimmed.to_lowercase())
}

/// Refuses quantity 0: an item on a list is wanted at least once.
pub(crate) fn check_shopping_quantity(name: &str, quantity: u32) -> Result<(), StorageError> {
    if quantity == 0 {
        return Err(StorageError::Invalid(format!(
            "quantity 0 of shopping item {name:?}: must be at least 1"
        )));
    }
    Ok(())
}
