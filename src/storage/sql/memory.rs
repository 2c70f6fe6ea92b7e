//! `ConversationMemory` on either SQL database: table `messages`, the newest entries of
//! a conversation kept in the backend's history cache (`history_cache.rs`) where the cache
//! sees every write of them: on SQLite always (one process writes the file); on
//! PostgreSQL only for the turn holding the conversation's lease, under its generation
//! (no other worker writes its history while the generation lasts), any other read going
//! to the database (another worker may have answered in the conversation since).

use async_trait::async_trait;

use super::{Dialect, SqlBackend, limit, per_dialect, sql};
use crate::ids::ConversationKey;
use crate::ports::{ConversationMemory, Fence, HistoryEntry, StorageError};
use crate::storage::history_cache::{ENTRIES_PER_CONVERSATION, HistoryCache};
use crate::storage::rows::{entries_json, history_entry_from_row};

/// The statement storing the history entries of the JSON array `entries`
/// (`entries_json`) in `messages`, in order and whole or not at all, each filed under
/// `inbox` (an SQL value; `NULL`: its own), read `beside` other tables (`"ended, "`).
pub(crate) fn remember(dialect: Dialect, entries: &str, inbox: &str, beside: &str) -> String {
    format!(
        "INSERT INTO messages (conversation_key, inbox_id, profile_id, role, content, \
         tool_calls, tool_call_id, is_chat_text, created_at_ms) \
         SELECT entry->>'conversation_key', COALESCE({inbox}, entry->>'inbox_id'), \
         entry->>'profile_id', entry->>'role', entry->>'content', entry->>'tool_calls', \
         entry->>'tool_call_id', CAST(entry->>'is_chat_text' AS INTEGER) <> 0, \
         CAST(entry->>'created_at_ms' AS BIGINT) FROM {beside}{} ORDER BY position",
        dialect.json_rows(entries)
    )
}

/// The tenure under which the backend's cache may hold what a turn holding `fence` (if
/// any) reads and writes (`HistoryCache`); `None`: it may not.
fn tenure<B: SqlBackend>(fence: Option<&Fence>) -> Option<Option<i64>> {
    match B::DIALECT {
        // dialect: SQLite's one process writes every entry, so its cache holds the whole
        // truth, under no tenure; PostgreSQL's only what a held lease's generation vouches
        // for.
        Dialect::Sqlite => Some(None),
        Dialect::Postgres => fence.map(|fence| Some(fence.generation)),
    }
}

fn cache<B: SqlBackend>(store: &B) -> std::sync::MutexGuard<'_, HistoryCache> {
    store
        .history()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The newest `limit` chat-text entries at or after `since_ms`, oldest first, read from
/// the database.
async fn read_recent<B: SqlBackend>(
    store: &B,
    conversation_key: &str,
    limit_to: usize,
    since_ms: i64,
) -> Result<Vec<HistoryEntry>, StorageError> {
    let recent = sql(
        "SELECT role, content, profile_id, inbox_id, tool_calls, tool_call_id, \
         created_at_ms FROM messages WHERE conversation_key = $1 AND is_chat_text = TRUE \
         AND created_at_ms >= $2 ORDER BY id DESC LIMIT $3",
    );
    let recent = recent
        .bind(conversation_key)
        .bind(since_ms)
        .bind(limit(limit_to));
    let rows = store.read(recent).await?;
    let mut entries = rows
        .iter()
        .map(history_entry_from_row)
        .collect::<Result<Vec<_>, StorageError>>()?;
    entries.reverse();
    Ok(entries)
}

/// A turn's history entries, just committed with its end under `fence` (`inbox.rs`),
/// given to the backend's cache (unfenced on PostgreSQL: no tenure can vouch for the
/// conversation's cached entries any more).
pub(crate) fn turn_remembered<B: SqlBackend>(
    store: &B,
    conversation_key: &str,
    inbox_id: &str,
    entries: &[HistoryEntry],
    fence: Option<&Fence>,
) {
    let mut cache = cache(store);
    match tenure::<B>(fence) {
        Some(tenure) => cache.appended_turn(conversation_key, inbox_id, entries, tenure),
        None if entries.is_empty() => {}
        None => cache.forget(conversation_key),
    }
}

#[async_trait]
impl<B: SqlBackend> ConversationMemory for B {
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        self.recent_held(conversation_key, limit, since_ms, None)
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
        let Some(tenure) = tenure::<B>(held).filter(|_| limit <= ENTRIES_PER_CONVERSATION) else {
            return read_recent(self, conversation_key, limit, since_ms).await;
        };
        let read_after = {
            let mut cache = cache(self);
            if let Some(entries) = cache.recent(conversation_key, limit, since_ms, tenure) {
                return Ok(entries);
            }
            cache.writes()
        };
        // Not under the cache's lock: other conversations' reads must not wait for this
        // one; a write told meanwhile keeps what was read out of the cache.
        let newest =
            read_recent(self, conversation_key, ENTRIES_PER_CONVERSATION, i64::MIN).await?;
        let answered = {
            let mut cache = cache(self);
            cache.load(conversation_key, newest, tenure, read_after);
            cache.recent(conversation_key, limit, since_ms, tenure)
        };
        match answered {
            Some(entries) => Ok(entries),
            None => read_recent(self, conversation_key, limit, since_ms).await,
        }
    }

    async fn append(
        &self,
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        let conversation_key = conversation_key.as_str();
        if !entries.is_empty() {
            // One statement, so the entries are stored whole or not at all.
            let append = per_dialect!(B::DIALECT, |dialect| remember(dialect, "$1", "$2", ""));
            let append = sql(append)
                .bind(entries_json(conversation_key, entries)?)
                .bind(None::<String>);
            self.write_count(append).await?;
        }
        let mut cache = cache(self);
        match tenure::<B>(None) {
            Some(_) => cache.appended(conversation_key, entries),
            // Written without the lease's generation: read the conversation afresh next
            // time.
            None => cache.forget(conversation_key),
        }
        Ok(())
    }
}
