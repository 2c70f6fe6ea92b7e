//! `UserProfiles` on PostgreSQL: table `user_profiles`, one row per fact of a member.
//!
//! Every change of a fact moves the family's version (`family_version`) and wakes every
//! worker (`members`) in the same statement, and each worker reads that version before it
//! authorises a request and on every `members` wake-up. So a member's facts read once are kept with the version
//! they were read under and read again only when this worker has since seen the version
//! move: a turn costs no round trip for them, and a fact changed on another worker is
//! read by the first request here that follows the change.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;
use sqlx::Row;

use super::coordination::WAKE_CHANNEL;
use super::{PostgresStore, database_error};
use crate::ids::MemberId;
use crate::ports::{ProfileFacts, StorageError, UserProfiles, WakeTopic, WakeUp, now_ms};

/// Most members whose facts are kept: beyond any family; past it the keeping starts over.
const MEMBERS_KEPT: usize = 1_024;

/// `$changed` (the fact's write), then the family's version moved on when a row was
/// written, and every worker woken to read it (`NOTIFY` on `$channel` with the payload
/// `$topic` followed by the new version, at the commit).
macro_rules! then_next_version {
    ($changed:literal, $channel:literal, $topic:literal) => {
        concat!(
            "WITH changed AS (",
            $changed,
            " RETURNING 1), bumped AS (INSERT INTO family_version (id, version) SELECT 1, 1 ",
            "WHERE EXISTS (SELECT 1 FROM changed) ",
            "ON CONFLICT (id) DO UPDATE SET version = family_version.version + 1 ",
            "RETURNING version) SELECT pg_notify(",
            $channel,
            ", ",
            $topic,
            " || version) FROM bumped"
        )
    };
}

/// The facts this worker read, each with the family's version it was read under, and the
/// newest version this worker has read.
#[derive(Default)]
pub(super) struct KnownFacts {
    version: AtomicI64,
    facts: Mutex<HashMap<MemberId, (i64, ProfileFacts)>>,
}

impl KnownFacts {
    /// The family's version as just read from the database.
    pub(super) fn family_read(&self, version: i64) {
        self.version.fetch_max(version, Ordering::SeqCst);
    }

    fn facts(&self) -> std::sync::MutexGuard<'_, HashMap<MemberId, (i64, ProfileFacts)>> {
        self.facts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl UserProfiles for PostgresStore {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        // Read before the facts: what they hold is at least as new as this version.
        let version = self.known_facts.version.load(Ordering::SeqCst);
        if let Some((_, facts)) = self
            .known_facts
            .facts()
            .get(member_id)
            .filter(|(read_under, _)| *read_under == version)
        {
            return Ok(facts.clone());
        }
        let rows = sqlx::query("SELECT key, value FROM user_profiles WHERE member_id = $1")
            .bind(member_id.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        let facts: ProfileFacts = rows
            .iter()
            .map(|row| (row.get("key"), row.get("value")))
            .collect();
        let mut known = self.known_facts.facts();
        if known.len() >= MEMBERS_KEPT {
            known.clear();
        }
        known.insert(member_id.clone(), (version, facts.clone()));
        Ok(facts)
    }

    async fn set(
        &self,
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        // The wake-up's payload without its subject, the version the statement writes.
        let members_changed = WakeUp::new(WakeTopic::Members, "").to_payload();
        let query = match value {
            Some(value) => sqlx::query(then_next_version!(
                "INSERT INTO user_profiles (member_id, key, value, updated_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (member_id, key) DO UPDATE SET \
                 value = excluded.value, updated_at_ms = excluded.updated_at_ms",
                "$5",
                "$6"
            ))
            .bind(member_id.as_str())
            .bind(key)
            .bind(value)
            .bind(now_ms())
            .bind(WAKE_CHANNEL)
            .bind(&members_changed),
            None => sqlx::query(then_next_version!(
                "DELETE FROM user_profiles WHERE member_id = $1 AND key = $2",
                "$3",
                "$4"
            ))
            .bind(member_id.as_str())
            .bind(key)
            .bind(WAKE_CHANNEL)
            .bind(&members_changed),
        };
        query.execute(&self.pool).await.map_err(database_error)?;
        // Read again here next time; other workers read it once they see the version move.
        self.known_facts.facts().remove(member_id);
        Ok(())
    }
}
