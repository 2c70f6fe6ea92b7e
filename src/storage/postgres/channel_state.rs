//! `ChannelState` on PostgreSQL: table `channel_state`, what each channel keeps between
//! runs (offsets, open questions), one row per channel and key.

use async_trait::async_trait;
use sqlx::Row;

use super::{PostgresStore, database_error};
use crate::ports::{ChannelState, StorageError, now_ms};

#[async_trait]
impl ChannelState for PostgresStore {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError> {
        sqlx::query("SELECT value FROM channel_state WHERE channel = $1 AND key = $2")
            .bind(channel)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map(|row| row.map(|row| row.get("value")))
            .map_err(database_error)
    }

    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError> {
        sqlx::query(
            "INSERT INTO channel_state (channel, key, value, updated_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (channel, key) DO UPDATE SET \
             value = excluded.value, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(channel)
        .bind(key)
        .bind(value)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError> {
        sqlx::query("DELETE FROM channel_state WHERE channel = $1 AND key = $2")
            .bind(channel)
            .bind(key)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(database_error)
    }

    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        // starts_with rather than LIKE: a key may hold `%` or `_`. Keys in byte order
        // whatever the database's collation, as SQLite sorts them.
        let rows = sqlx::query(
            "SELECT key, value FROM channel_state WHERE channel = $1 \
             AND starts_with(key, $2) ORDER BY key COLLATE \"C\"",
        )
        .bind(channel)
        .bind(prefix)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(rows
            .iter()
            .map(|row| (row.get("key"), row.get("value")))
            .collect())
    }
}
