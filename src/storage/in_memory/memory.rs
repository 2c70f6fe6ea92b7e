//! The in-memory `ConversationMemory`: each conversation's history, in the store's main mutex.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::ConversationKey;
use crate::ports::{ConversationMemory, HistoryEntry, StorageError};

#[async_trait]
impl ConversationMemory for InMemoryStore {
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let state = self.lock();
        let Some(entries) = state.messages.get(conversation_key) else {
            return Ok(Vec::new());
        };
        let mut newest: Vec<HistoryEntry> = entries
            .iter()
            .rev()
            .map(|(_, entry)| entry)
            .filter(|entry| entry.is_chat_text() && entry.created_at_ms >= since_ms)
            .take(limit)
            .cloned()
            .collect();
        newest.reverse();
        Ok(newest)
    }

    async fn append(
        &self,
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        self.lock().remember(conversation_key, entries);
        Ok(())
    }
}
