//! `RegisteredPlugins` on PostgreSQL: table `registered_plugins`, one row per plugin, its
//! manifest as JSON text.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PostgresStore, database_error};
use crate::ports::{RegisteredPlugin, RegisteredPlugins, StorageError};

fn plugin_from_row(row: &PgRow) -> Result<RegisteredPlugin, StorageError> {
    let manifest: String = row.get("manifest");
    Ok(RegisteredPlugin {
        plugin_id: row.get("plugin_id"),
        manifest: serde_json::from_str(&manifest).map_err(|error| {
            StorageError::Corrupt(format!("registered_plugins.manifest: {error}"))
        })?,
        registered_at_ms: row.get("registered_at_ms"),
    })
}

#[async_trait]
impl RegisteredPlugins for PostgresStore {
    async fn upsert(
        &self,
        plugin_id: &str,
        manifest: &serde_json::Value,
        registered_at_ms: i64,
    ) -> Result<(), StorageError> {
        let manifest = serde_json::to_string(manifest).map_err(|error| {
            StorageError::Invalid(format!("manifest of plugin {plugin_id:?}: {error}"))
        })?;
        sqlx::query(
            "INSERT INTO registered_plugins (plugin_id, manifest, registered_at_ms) \
             VALUES ($1, $2, $3) ON CONFLICT (plugin_id) DO UPDATE SET \
             manifest = excluded.manifest, registered_at_ms = excluded.registered_at_ms",
        )
        .bind(plugin_id)
        .bind(&manifest)
        .bind(registered_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn get(&self, plugin_id: &str) -> Result<Option<RegisteredPlugin>, StorageError> {
        sqlx::query(
            "SELECT plugin_id, manifest, registered_at_ms FROM registered_plugins \
             WHERE plugin_id = $1",
        )
        .bind(plugin_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?
        .as_ref()
        .map(plugin_from_row)
        .transpose()
    }

    async fn list(&self) -> Result<Vec<RegisteredPlugin>, StorageError> {
        // Ids in byte order whatever the database's collation, as SQLite sorts them.
        let rows = sqlx::query(
            "SELECT plugin_id, manifest, registered_at_ms FROM registered_plugins \
             ORDER BY plugin_id COLLATE \"C\"",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(plugin_from_row).collect()
    }

    async fn remove(&self, plugin_id: &str) -> Result<bool, StorageError> {
        sqlx::query("DELETE FROM registered_plugins WHERE plugin_id = $1")
            .bind(plugin_id)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected() > 0)
            .map_err(database_error)
    }
}
