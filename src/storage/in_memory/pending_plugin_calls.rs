//! The in-memory `PendingPluginCalls`: the same behaviour as SQLite, in the
//! `InMemoryStore`'s plugins mutex.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{PendingPluginCall, PendingPluginCalls, StorageError};

fn call_key(conversation_key: &ConversationKey, member_id: &MemberId) -> (String, String) {
    (conversation_key.to_string(), member_id.to_string())
}

#[async_trait]
impl PendingPluginCalls for InMemoryStore {
    async fn put(&self, call: &PendingPluginCall) -> Result<(), StorageError> {
        self.plugin_state().pending_calls.insert(
            call_key(&call.conversation_key, &call.member_id),
            call.clone(),
        );
        Ok(())
    }

    async fn take_valid(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .remove(&call_key(conversation_key, member_id))
            .filter(|call| !call.is_expired(now_ms)))
    }

    async fn peek(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .get(&call_key(conversation_key, member_id))
            .filter(|call| !call.is_expired(now_ms))
            .cloned())
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        Ok(self
            .plugin_state()
            .pending_calls
            .remove(&call_key(conversation_key, member_id))
            .is_some())
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, StorageError> {
        let mut state = self.plugin_state();
        let before = state.pending_calls.len();
        state
            .pending_calls
            .retain(|_, call| !call.is_expired(now_ms));
        Ok(u64::try_from(before - state.pending_calls.len()).unwrap_or(u64::MAX))
    }
}
