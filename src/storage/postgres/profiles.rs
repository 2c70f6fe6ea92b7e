//! `UserProfiles` on PostgreSQL: table `user_profiles`, one row per fact of a member, read
//! fresh on every turn (another worker may have changed the profile since).

use async_trait::async_trait;
use sqlx::Row;

use super::{PostgresStore, database_error};
use crate::ids::MemberId;
use crate::ports::{ProfileFacts, StorageError, UserProfiles, now_ms};

#[async_trait]
impl UserProfiles for PostgresStore {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        let rows = sqlx::query("SELECT key, value FROM user_profiles WHERE member_id = $1")
            .bind(member_id.as_str())
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
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let query = match value {
            Some(value) => sqlx::query(
                "INSERT INTO user_profiles (member_id, key, value, updated_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (member_id, key) DO UPDATE SET \
                 value = excluded.value, updated_at_ms = excluded.updated_at_ms",
            )
            .bind(member_id.as_str())
            .bind(key)
            .bind(value)
            .bind(now_ms()),
            None => sqlx::query("DELETE FROM user_profiles WHERE member_id = $1 AND key = $2")
                .bind(member_id.as_str())
                .bind(key),
        };
        query
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(database_error)
    }
}
