//! `RegisteredPlugins` on either SQL database: table `registered_plugins`, one row per
//! plugin, its manifest as JSON text.

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, per_dialect, sql};
use crate::ports::{RegisteredPlugin, RegisteredPlugins, StorageError};

fn plugin_from_row(row: &impl SqlRow) -> Result<RegisteredPlugin, StorageError> {
    Ok(RegisteredPlugin {
        plugin_id: row.text("plugin_id")?,
        manifest: row.json("registered_plugins", "manifest")?,
        registered_at_ms: row.integer("registered_at_ms")?,
    })
}

#[async_trait]
impl<B: SqlBackend> RegisteredPlugins for B {
    async fn upsert(
        &self,
        plugin_id: &str,
        manifest: &serde_json::Value,
        registered_at_ms: i64,
    ) -> Result<(), StorageError> {
        let manifest = serde_json::to_string(manifest).map_err(|error| {
            StorageError::Invalid(format!("manifest of plugin {plugin_id:?}: {error}"))
        })?;
        let upsert = sql(
            "INSERT INTO registered_plugins (plugin_id, manifest, registered_at_ms) \
             VALUES ($1, $2, $3) ON CONFLICT (plugin_id) DO UPDATE SET \
             manifest = excluded.manifest, registered_at_ms = excluded.registered_at_ms",
        );
        self.write_count(upsert.bind(plugin_id).bind(manifest).bind(registered_at_ms))
            .await
            .map(drop)
    }

    async fn get(&self, plugin_id: &str) -> Result<Option<RegisteredPlugin>, StorageError> {
        let get = sql(
            "SELECT plugin_id, manifest, registered_at_ms FROM registered_plugins \
             WHERE plugin_id = $1",
        );
        let row = self.read_optional(get.bind(plugin_id)).await?;
        row.as_ref().map(plugin_from_row).transpose()
    }

    async fn list(&self) -> Result<Vec<RegisteredPlugin>, StorageError> {
        // Ids in byte order, whatever PostgreSQL's collation.
        let list = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT plugin_id, manifest, registered_at_ms FROM registered_plugins \
             ORDER BY plugin_id{}",
            dialect.byte_order()
        ));
        let rows = self.read(sql(list)).await?;
        rows.iter().map(plugin_from_row).collect()
    }

    async fn remove(&self, plugin_id: &str) -> Result<bool, StorageError> {
        let remove = sql("DELETE FROM registered_plugins WHERE plugin_id = $1").bind(plugin_id);
        Ok(self.write_count(remove).await? > 0)
    }
}
