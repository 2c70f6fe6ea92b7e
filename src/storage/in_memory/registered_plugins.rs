//! The in-memory `RegisteredPlugins`: the same behaviour as SQLite, in the
//! `InMemoryStore`'s plugins mutex.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{RegisteredPlugin, RegisteredPlugins, StorageError};

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
