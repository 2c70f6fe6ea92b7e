//! `UserProfiles` on SQLite: table `user_profiles`.

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ports::{ProfileFacts, StorageError, UserProfiles, now_ms};

#[async_trait]
impl UserProfiles for SqliteStore {
    async fn get(&self, member_id: &str) -> Result<ProfileFacts, StorageError> {
        let rows = sqlx::query("SELECT key, value FROM user_profiles WHERE member_id = ?")
            .bind(member_id)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(rows
            .iter()
            .map(|row| (row.get("key"), row.get("value")))
            .collect())
    }

    async fn set(
        &self,
        member_id: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let query = match value {
            Some(value) => sqlx::query(
                "INSERT INTO user_profiles (member_id, key, value, updated_at_ms) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (member_id, key) DO UPDATE SET value = excluded.value, \
                 updated_at_ms = excluded.updated_at_ms",
            )
            .bind(member_id)
            .bind(key)
            .bind(value)
            .bind(now_ms()),
            None => sqlx::query("DELETE FROM user_profiles WHERE member_id = ? AND key = ?")
                .bind(member_id)
                .bind(key),
        };
        query
            .execute(&self.writer)
            .await
            .map(|_| ())
            .map_err(database_error)
    }
}
