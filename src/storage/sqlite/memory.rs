//! `ConversationMemory` on SQLite: table `messages`.

use async_trait::async_trait;

use super::{SqliteStore, database_error};
use crate::ids::ConversationKey;
use crate::ports::{ConversationMemory, HistoryEntry, StorageError};
use crate::storage::history_cache::ENTRIES_PER_CONVERSATION;
use crate::storage::rows::{entries_json, history_entry_from_row};

impl SqliteStore {
    /// The newest `limit` chat-text entries at or after `since_ms`, oldest first.
    async fn read_recent(
        &self,
        conversation_key: &str,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let rows = sqlx::query(
            "SELECT role, content, profile_id, inbox_id, tool_calls, tool_call_id, created_at_ms \
             FROM messages WHERE conversation_key = ? AND is_chat_text = 1 AND created_at_ms >= ? \
             ORDER BY id DESC LIMIT ?",
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
}

#[async_trait]
impl ConversationMemory for SqliteStore {
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let conversation_key = conversation_key.as_str();
        if limit > ENTRIES_PER_CONVERSATION {
            return self.read_recent(conversation_key, limit, since_ms).await;
        }
        // Held across a miss's load so a concurrent write cannot be overtaken by it.
        let mut cache = self.history.lock().await;
        if let Some(entries) = cache.recent(conversation_key, limit, since_ms, None) {
            return Ok(entries);
        }
        let newest = self
            .read_recent(conversation_key, ENTRIES_PER_CONVERSATION, i64::MIN)
            .await?;
        cache.load(conversation_key, newest, None);
        Ok(cache
            .recent(conversation_key, limit, since_ms, None)
            .expect("a conversation just loaded answers from the cache"))
    }

    async fn append(
        &self,
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        let conversation_key = conversation_key.as_str();
        let mut cache = self.history.lock().await;
        let rows = entries_json(conversation_key, entries)?;
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    // One statement, so the entries are stored whole or not at all.
                    sqlx::query(
                        "INSERT INTO messages (conversation_key, inbox_id, profile_id, role, \
                         content, tool_calls, tool_call_id, is_chat_text, created_at_ms) \
                         SELECT json_extract(value, '$.conversation_key'), \
                         json_extract(value, '$.inbox_id'), json_extract(value, '$.profile_id'), \
                         json_extract(value, '$.role'), json_extract(value, '$.content'), \
                         json_extract(value, '$.tool_calls'), json_extract(value, '$.tool_call_id'), \
                         json_extract(value, '$.is_chat_text'), json_extract(value, '$.created_at_ms') \
                         FROM json_each(?) ORDER BY key",
                    )
                    .bind(&rows)
                    .execute(&mut *connection)
                    .await
                    .map(|_| ())
                    .map_err(database_error)
                })
            })
            .await?;
        cache.appended(conversation_key, entries);
        Ok(())
    }
}
