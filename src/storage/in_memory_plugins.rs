//! In-memory adapters of the plugins' storage ports (`ShoppingLists`,
//! `PendingPluginCalls`, `RegisteredPlugins`): the same behaviour as SQLite, in the
//! `InMemoryStore`'s second mutex.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::in_memory::InMemoryStore;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    PendingPluginCall, PendingPluginCalls, RegisteredPlugin, RegisteredPlugins, ShoppingItem,
    ShoppingLists, StorageError, check_shopping_quantity, shopping_key,
};

#[derive(Default)]
pub(super) struct PluginState {
    /// List key → (item key, item) in the order first added.
    shopping: BTreeMap<String, Vec<(String, ShoppingItem)>>,
    /// (conversation key, member id) → the call waiting for that member.
    pending_calls: BTreeMap<(String, String), PendingPluginCall>,
    /// Plugin id → its registration; a BTreeMap lists by id, as SQLite does.
    registered: BTreeMap<String, RegisteredPlugin>,
}

impl InMemoryStore {
    fn plugin_state(&self) -> MutexGuard<'_, PluginState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.plugins
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn call_key(conversation_key: &ConversationKey, member_id: &MemberId) -> (String, String) {
    (conversation_key.to_string(), member_id.to_string())
}

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

#[async_trait]
impl PendingPluginCalls for InMemoryStore {
    async fn put(&self, call: &PendingPluginCall) -> Result<(), StorageError> {
        self.plugin_state().pending_calls.insert(
            call_key(&call.conversation_key, &call.member_id),
            call.clone(),
        );
        Ok(())
    }

    async fn take_valid(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .remove(&call_key(conversation_key, member_id))
            .filter(|call| !call.is_expired(now_ms)))
    }

    async fn peek(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .get(&call_key(conversation_key, member_id))
            .filter(|call| !call.is_expired(now_ms))
            .cloned())
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .remove(&call_key(conversation_key, member_id))
            .is_some())
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, StorageError> {
        let mut state = self.plugin_state();
        let before = state.pending_calls.len();
        state
            .pending_calls
            .retain(|_, call| !call.is_expired(now_ms));
        Ok(u64::try_from(before - state.pending_calls.len()).unwrap_or(u64::MAX))
    }
}

#[async_trait]
impl RegisteredPlugins for InMemoryStore {
    async fn upsert(
        &self,
        plugin_id: &str,
        manifest: &serde_json::Value,
        registered_at_ms: i64,
    ) -> Result<(), StorageError> {
        self.plugin_state().registered.insert(
            plugin_id.to_owned(),
            RegisteredPlugin {
                plugin_id: plugin_id.to_owned(),
                manifest: manifest.clone(),
                registered_at_ms,
            },
        );
        Ok(())
    }

    async fn get(&self, plugin_id: &str) -> Result<Option<RegisteredPlugin>, StorageError> {
        Ok(self.plugin_state().registered.get(plugin_id).cloned())
    }

    async fn list(&self) -> Result<Vec<RegisteredPlugin>, StorageError> {
        Ok(self.plugin_state().registered.values().cloned().collect())
    }

    async fn remove(&self, plugin_id: &str) -> Result<bool, StorageError> {
        Ok(self.plugin_state().registered.remove(plugin_id).is_some())
    }
}
