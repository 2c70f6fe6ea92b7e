//! `UserProfiles` on either SQL database: table `user_profiles`, one row per fact of a
//! member, read through `KnownFacts`: every turn reads the member's facts and few ever
//! change them, so facts read once are kept with the version they were read under and
//! read again only when the version has moved since.
//!
//! On PostgreSQL the version is the family's (`family_version`): every change of a fact
//! moves it and wakes every worker (`members`) in the same statement, and each worker
//! reads it before it authorises a request and on every `members` wake-up
//! (`KnownFacts::family_read`), so a fact changed on another worker is read by the first
//! request here that follows the change. On SQLite this process is the database's only
//! writer, and the version is moved by its own changes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;

use super::{Dialect, SqlBackend, SqlRow, sql};
use crate::ids::MemberId;
use crate::ports::{ProfileFacts, StorageError, UserProfiles, WakeTopic, WakeUp, now_ms};
use crate::storage::postgres::WAKE_CHANNEL;

/// Most members whose facts are kept: beyond any family; past it the keeping starts over.
const MEMBERS_KEPT: usize = 1_024;

/// A fact stored: `$1` the member, `$2` the key, `$3` the value, `$4` now.
macro_rules! upsert {
    () => {
        "INSERT INTO user_profiles (member_id, key, value, updated_at_ms) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (member_id, key) DO UPDATE SET \
         value = excluded.value, updated_at_ms = excluded.updated_at_ms"
    };
}

/// A fact removed: `$1` the member, `$2` the key.
macro_rules! delete {
    () => {
        "DELETE FROM user_profiles WHERE member_id = $1 AND key = $2"
    };
}

/// `$changed` (the fact's write), then the family's version moved on when a row was
/// written, and every worker woken to read it (`NOTIFY` on `$channel` with the payload
/// `$topic` followed by the new version, at the commit).
macro_rules! then_next_version {
    ($changed:expr, $channel:literal, $topic:literal) => {
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

/// The facts this worker read, each with the version it was read under, and the newest
/// version this worker has read (PostgreSQL) or made (SQLite).
#[derive(Default)]
pub(crate) struct KnownFacts {
    version: AtomicI64,
    facts: Mutex<HashMap<MemberId, (i64, ProfileFacts)>>,
}

impl KnownFacts {
    /// The family's version as just read from the database.
    pub(crate) fn family_read(&self, version: i64) {
        self.version.fetch_max(version, Ordering::SeqCst);
    }

    fn facts(&self) -> std::sync::MutexGuard<'_, HashMap<MemberId, (i64, ProfileFacts)>> {
        self.facts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl<B: SqlBackend> UserProfiles for B {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        let known = self.known_facts();
        // Read before the facts: what they hold is at least as new as this version.
        let version = known.version.load(Ordering::SeqCst);
        if let Some((_, facts)) = known
            .facts()
            .get(member_id)
            .filter(|(read_under, _)| *read_under == version)
        {
            return Ok(facts.clone());
        }
        let read = sql("SELECT key, value FROM user_profiles WHERE member_id = $1");
        let rows = self.read(read.bind(member_id.as_str())).await?;
        let facts = rows
            .iter()
            .map(|row| Ok((row.text("key")?, row.text("value")?)))
            .collect::<Result<ProfileFacts, StorageError>>()?;
        let mut kept = known.facts();
        if kept.len() >= MEMBERS_KEPT {
            kept.clear();
        }
        kept.insert(member_id.clone(), (version, facts.clone()));
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
        let set = match (B::DIALECT, value.is_some()) {
            // dialect: on PostgreSQL the fact's statement moves the family's version and
            // wakes every worker, so each reads the member's facts again; SQLite's one
            // process moves its own version below.
            (Dialect::Postgres, true) => then_next_version!(upsert!(), "$5", "$6"),
            (Dialect::Postgres, false) => then_next_version!(delete!(), "$3", "$4"),
            (Dialect::Sqlite, true) => upsert!(),
            (Dialect::Sqlite, false) => delete!(),
        };
        let mut set = sql(set).bind(member_id.as_str()).bind(key);
        if let Some(value) = value {
            set = set.bind(value).bind(now_ms());
        }
        if B::DIALECT == Dialect::Postgres {
            set = set.bind(WAKE_CHANNEL).bind(members_changed);
        }
        self.write_count(set).await?;
        let known = self.known_facts();
        if B::DIALECT == Dialect::Sqlite {
            // A read of the facts that began before this change is kept under the
            // version it began with, no longer this one.
            known.version.fetch_add(1, Ordering::SeqCst);
        }
        // Read again here next time; other workers read it once they see the version move.
        known.facts().remove(member_id);
        Ok(())
    }
}
