//! `ConversationMemory` on PostgreSQL: table `messages`, read fresh (another worker may
//! have answered in the conversation since), except by the turn holding the conversation's
//! lease: no other worker writes its history while the generation lasts, so what this
//! worker read and wrote under it is kept (`history_cache.rs`) and read again without a
//! round trip.

use async_trait::async_trait;
use sqlx::PgConnection;

use super::{PostgresStore, database_error};
use crate::ids::ConversationKey;
use crate::ports::{ConversationMemory, Fence, HistoryEntry, StorageError};
use crate::storage::history_cache::{ENTRIES_PER_CONVERSATION, HistoryCache};
use crate::storage::rows::{entries_json, history_entry_from_row};

/// Store `entries` in order, in one statement (whole or not at all), on the caller's
/// connection; `inbox_id`, when given, files each under that message.
pub(super) async fn insert_entries(
    connection: &mut PgConnection,
    conversation_key: &str,
    inbox_id: Option<&str>,
    entries: &[HistoryEntry],
) -> Result<(), StorageError> {
    if entries.is_empty() {
        return Ok(());
    }
    let rows = entries_json(conversation_key, entries)?;
    sqlx::query(
        "INSERT INTO messages (conversation_key, inbox_id, profile_id, role, content, \
         tool_calls, tool_call_id, is_chat_text, created_at_ms) \
         SELECT entry->>'conversation_key', COALESCE($2, entry->>'inbox_id'), \
         entry->>'profile_id', entry->>'role', entry->>'content', entry->>'tool_calls', \
         entry->>'tool_call_id', (entry->>'is_chat_text')::integer <> 0, \
         (entry->>'created_at_ms')::bigint \
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS entries (entry, position) \
         ORDER BY position",
    )
    .bind(&rows)
    .bind(inbox_id)
    .execute(&mut *connection)
    .await
    .map(|_| ())
    .map_err(database_error)
}

impl PostgresStore {
    /// The newest `limit` chat-text entries at or after `since_ms`, oldest first.
    async fn read_recent(
        &self,
        conversation_key: &str,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let rows = sqlx::query(
            "SELECT role, content, profile_id, inbox_id, tool_calls, tool_call_id, created_at_ms \
             FROM messages WHERE conversation_key = $1 AND is_chat_text AND created_at_ms >= $2 \
             ORDER BY id DESC LIMIT $3",
        )
        .bind(conversation_key)
        .bind(since_ms)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        let mut entries = rows
            .iter()
            .map(history_entry_from_row)
            .collect::<Result<Vec<_>, StorageError>>()?;
        entries.reverse();
        Ok(entries)
    }

    fn held_history(&self) -> std::sync::MutexGuard<'_, HistoryCache> {
        self.held_history
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A turn's history entries, just committed with its end under `fence` (`None`:
    /// unfenced, so no tenure can vouch for the conversation's cached entries any more).
    pub(super) fn turn_remembered(
        &self,
        conversation_key: &str,
        inbox_id: &str,
        entries: &[HistoryEntry],
        fence: Option<&Fence>,
    ) {
        let mut cache = self.held_history();
        match fence {
            Some(fence) => {
                cache.appended_turn(conversation_key, inbox_id, entries, Some(fence.generation));
            }
            None if entries.is_empty() => {}
            None => cache.forget(conversation_key),
        }
    }
}

#[async_trait]
impl ConversationMemory for PostgresStore {
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        self.read_recent(conversation_key.as_str(), limit, since_ms)
            .await
    }

    async fn recent_held(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
        held: Option<&Fence>,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let conversation_key = conversation_key.as_str();
        let Some(held) = held.filter(|_| limit <= ENTRIES_PER_CONVERSATION) else {
            return self.read_recent(conversation_key, limit, since_ms).await;
        };
        let tenure = Some(held.generation);
        if let Some(entries) = self
            .held_history()
            .recent(conversation_key, limit, since_ms, tenure)
        {
            return Ok(entries);
        }
        // Not under the cache's lock: the conversation's own turns are one at a time, and
        // other conversations' reads must not wait for this one.
        let newest = self
            .read_recent(conversation_key, ENTRIES_PER_CONVERSATION, i64::MIN)
            .await?;
        let answered = {
            let mut cache = self.held_history();
            cache.load(conversation_key, newest, tenure);
            cache.recent(conversation_key, limit, since_ms, tenure)
        };
        match answered {
            Some(entries) => Ok(entries),
            None => self.read_recent(conversation_key, limit, since_ms).await,
        }
    }

    async fn append(
        &self,
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        insert_entries(&mut connection, conversation_key.as_str(), None, entries).await?;
        // Written without the lease's generation: read the conversation afresh next time.
        self.held_history().forget(conversation_key.as_str());
        Ok(())
    }
}
