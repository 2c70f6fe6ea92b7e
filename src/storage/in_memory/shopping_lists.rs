//! The in-memory `ShoppingLists`: the same behaviour as SQLite, in the `InMemoryStore`'s
//! plugins mutex.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::MemberId;
use crate::ports::{
    ShoppingItem, ShoppingLists, StorageError, check_shopping_quantity, shopping_key,
};

#[async_trait]
impl ShoppingLists for InMemoryStore {
    async fn add(
        &self,
        list: &str,
        name: &str,
        quantity: u32,
        member_id: &MemberId,
        at_ms: i64,
    ) -> Result<ShoppingItem, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        check_shopping_quantity(name, quantity)?;
        let mut state = self.plugin_state();
        let items = state.shopping.entry(list_key).or_default();
        if let Some((_, item)) = items.iter_mut().find(|(key, _)| *key == item_key) {
            // The same ceiling as SQLite's.
            item.quantity = item.quantity.saturating_add(quantity);
            return Ok(item.clone());
        }
        let item = ShoppingItem {
            name: name.trim().to_owned(),
            quantity,
            added_by: member_id.clone(),
            added_at_ms: at_ms,
        };
        items.push((item_key, item.clone()));
        Ok(item)
    }

    async fn remove(&self, list: &str, name: &str) -> Result<bool, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let item_key = shopping_key("shopping item", name)?;
        let mut state = self.plugin_state();
        let Some(items) = state.shopping.get_mut(&list_key) else {
            return Ok(false);
        };
        let before = items.len();
        items.retain(|(key, _)| *key != item_key);
        Ok(items.len() < before)
    }

    async fn list(&self, list: &str) -> Result<Vec<ShoppingItem>, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        Ok(self
            .plugin_state()
            .shopping
            .get(&list_key)
            .map(|items| items.iter().map(|(_, item)| item.clone()).collect())
            .unwrap_or_default())
    }

    async fn clear(&self, list: &str) -> Result<u64, StorageError> {
        let list_key = shopping_key("shopping list", list)?;
        let removed = self
            .plugin_state()
            .shopping
            .remove(&list_key)
            .map_or(0, |items| items.len());
        Ok(u64::try_from(removed).unwrap_or(u64::MAX))
    }
}
