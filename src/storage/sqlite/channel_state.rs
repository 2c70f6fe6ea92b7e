//! `ChannelState` on SQLite: table `channel_state`.

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ports::{ChannelState, StorageError, now_ms};

#[async_trait]
impl ChannelState for SqliteStore {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError> {
        sqlx::query("SELECT value FROM channel_state WHERE channel = ? AND key = ?")
            .bind(channel)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map(|row| row.map(|row| row.get("value")))
            .map_err(database_error)
    }

    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError> {
        let (channel, key, value) = (channel.to_owned(), key.to_owned(), value.to_owned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO channel_state (channel, key, value, updated_at_ms) \
                         VALUES (?, ?, ?, ?) ON CONFLICT (channel, key) DO UPDATE SET \
                         value = excluded.value, updated_at_ms = excluded.updated_at_ms",
                    )
                    .bind(&channel)
                    .bind(&key)
                    .bind(&value)
                    .bind(now_ms())
                    .execute(&mut *connection)
                    .await
                    .map(|_| ())
                    .map_err(database_error)
                })
            })
            .await
    }

    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError> {
        let (channel, key) = (channel.to_owned(), key.to_owned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM channel_state WHERE channel = ? AND key = ?")
                        .bind(&channel)
                        .bind(&key)
                        .execute(&mut *connection)
                        .await
                        .map(|_| ())
                        .map_err(database_error)
                })
            })
            .await
    }

    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        // substr rather than LIKE: a key may hold `%` or `_`.
        let rows = sqlx::query(
            "SELECT key, value FROM channel_state WHERE channel = ? \
             AND substr(key, 1, length(?)) = ? ORDER BY key",
        )
        .bind(channel)
        .bind(prefix)
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
