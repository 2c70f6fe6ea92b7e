//! External plugins registered over the HTTP API (`POST /api/plugins/register`), kept
//! so they survive a restart. The manifest is stored as the plugin sent it (schema
//! only, never default values); reading it is the plugins module's business.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StorageError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredPlugin {
    pub plugin_id: String,
    pub manifest: serde_json::Value,
    /// When it last registered.
    pub registered_at_ms: i64,
}

#[async_trait]
pub trait RegisteredPlugins: Send + Sync {
    /// Register `plugin_id`, replacing its manifest and time if it was registered before.
    async fn upsert(
        &self,
        plugin_id: &str,
        manifest: &serde_json::Value,
        registered_at_ms: i64,
    ) -> Result<(), StorageError>;
    async fn get(&self, plugin_id: &str) -> Result<Option<RegisteredPlugin>, StorageError>;
    /// Every registered plugin, by id.
    async fn list(&self) -> Result<Vec<RegisteredPlugin>, StorageError>;
    /// Unregister `plugin_id`; whether it was registered.
    async fn remove(&self, plugin_id: &str) -> Result<bool, StorageError>;
}
