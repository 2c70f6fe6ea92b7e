//! `UserProfiles` on SQLite: table `user_profiles`, read through a write-through cache.
//!
//! Every turn reads the member's profile and few ever change it, and this process is
//! the database's only writer, so the cache saves a round trip per turn. One async
//! lock covers cache misses and writes, so a load racing an update cannot leave a
//! stale profile behind.

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ids::MemberId;
use crate::ports::{ProfileFacts, StorageError, UserProfiles, now_ms};

pub(super) type ProfileCache = tokio::sync::Mutex<HashMap<MemberId, ProfileFacts>>;

#[async_trait]
impl UserProfiles for SqliteStore {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        let mut cache = self.profiles.lock().await;
        if let Some(facts) = cache.get(member_id) {
            return Ok(facts.clone());
        }
        let rows = sqlx::query("SELECT key, value FROM user_profiles WHERE member_id = ?")
            .bind(member_id.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        let facts: ProfileFacts = rows
            .iter()
            .map(|row| (row.get("key"), row.get("value")))
            .collect();
        cache.insert(member_id.clone(), facts.clone());
        Ok(facts)
    }

    async fn set(
        &self,
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let mut cache = self.profiles.lock().await;
        let (member, key_owned, value_owned) = (
            member_id.to_string(),
            key.to_string(),
            value.map(str::to_string),
        );
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let query = match &value_owned {
                        Some(value) => sqlx::query(
                            "INSERT INTO user_profiles (member_id, key, value, updated_at_ms) \
                             VALUES (?, ?, ?, ?) ON CONFLICT (member_id, key) DO UPDATE SET \
                             value = excluded.value, updated_at_ms = excluded.updated_at_ms",
                        )
                        .bind(&member)
                        .bind(&key_owned)
                        .bind(value)
                        .bind(now_ms()),
                        None => {
                            sqlx::query("DELETE FROM user_profiles WHERE member_id = ? AND key = ?")
                                .bind(&member)
                                .bind(&key_owned)
                        }
                    };
                    query
                        .execute(&mut *connection)
                        .await
                        .map(|_| ())
                        .map_err(database_error)
                })
            })
            .await?;
        if let Some(facts) = cache.get_mut(member_id) {
            match value {
                Some(value) => facts.insert(key.to_string(), value.to_string()),
                None => facts.remove(key),
            };
        }
        Ok(())
    }
}
